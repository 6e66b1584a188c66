"""The raw layer's front door: client input turned into events, checked before anything is stored.

The raw layer's transactions (append, revoke, supersede, erase) live in :mod:`memlineage.store`;
what decides validity lives in :mod:`memlineage.consolidation.select` and :mod:`memlineage.meaning`.
"""
