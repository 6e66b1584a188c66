"""Interfaces: the command line, the HTTP service, the MCP server and the LangGraph store.

The only callers of the library API from outside; nothing below this package imports it.
"""
