"""Lineage: where a piece of memory came from (PROV, ``why``, ``audit``) and erasure."""
