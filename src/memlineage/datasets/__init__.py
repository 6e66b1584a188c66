"""Adapters from public memory benchmarks to memlineage events and gold.

Data is read from where the user keeps it; nothing is downloaded or bundled.
"""
