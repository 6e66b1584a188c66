"""Meaning: what a text says that must never be lost. Pure, no I/O.

Extraction of the must-preserve items by kind, canonical values and units, contradictions over
time, and the per-tenant temporal and trust policies.
"""
