"""The store: every transaction of memlineage, composed from one module per concept.

- ``core``: connections, the clock row lock taken first by every writer (I7), the epoch;
- ``schema``: migrations;
- ``append``: the raw layer's appends (I1, I2);
- ``operations``: revoke, trust, conflict, resolve;
- ``staleness``: descendants of an invalidated source go stale;
- ``switch``: artifacts and the alias compare-and-swap;
- ``jobs``: the consolidation job queue (its triggers live in ``triggers``);
- ``policies``: per-tenant temporal and trust policies, versioned, rolled out per subject;
- ``detect``: contradictions over time, detected by a job after the append; dismissal;
- ``erase``: data-protection erasure;
- ``history``: what audit and lineage read, and the sweep of orphaned candidates;
- ``release``: release mode, generator configurations, shadow reviews, bypass;
- ``keys``: API keys of the HTTP service (no subject data);
- ``evals``: stored evaluation runs (no subject data);
- ``vectors``: the embedding job, the tenant's embedder, the vectors recall reads.
- ``keyed``: the versions of one keyed value without reading its subject (LangGraph store).

A backend subclass supplies connections and the SQL text that differs.
"""

from __future__ import annotations

from memlineage.store.append import AppendMixin
from memlineage.store.erase import EraseMixin
from memlineage.store.evals import EvalRunsMixin
from memlineage.store.history import HistoryMixin
from memlineage.store.jobs import JobsMixin
from memlineage.store.keyed import KeyedMixin
from memlineage.store.keys import KeysMixin
from memlineage.store.operations import OperationsMixin
from memlineage.store.release import ReleaseMixin
from memlineage.store.schema import SchemaMixin
from memlineage.store.switch import SwitchMixin
from memlineage.store.vectors import VectorsMixin


class SqlStore(
    SchemaMixin,
    AppendMixin,
    OperationsMixin,
    SwitchMixin,
    JobsMixin,
    HistoryMixin,
    EraseMixin,
    ReleaseMixin,
    KeysMixin,
    EvalRunsMixin,
    VectorsMixin,
    KeyedMixin,
):
    """Every transaction of memlineage; a backend subclass supplies connections."""


__all__ = ["SqlStore"]
