"""Consolidation (steps 1–8 of the design): selection, generation, the gate, rendering, verify."""
