"""Adapters that let agent frameworks use memlineage as their memory store."""
