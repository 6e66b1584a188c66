"""memlineage: memory consolidation for LLM agents with lineage and a fidelity gate."""

from .api import Memory
from .consolidate import Consolidation, Consolidations
from .errors import BadInput, DuplicateEventId, MemlineageError, NotFound, SchemaTooNew, StoreError
from .model import (
    Alias,
    Artifact,
    ArtifactStatus,
    Claim,
    Clock,
    Conflict,
    Event,
    Fact,
    GateFailure,
    GateReport,
    Item,
    Manifest,
    NewEvent,
    Output,
    SwitchFailure,
    SwitchResult,
)
from .queue import RetryPolicy
from .recall import LeftOut, Recall, RecallSet
from .render import render
from .store import open_store
from .store.protocol import Job

__all__ = [
    "Alias",
    "Artifact",
    "ArtifactStatus",
    "BadInput",
    "Claim",
    "Clock",
    "Conflict",
    "Consolidation",
    "Consolidations",
    "DuplicateEventId",
    "Event",
    "Fact",
    "GateFailure",
    "GateReport",
    "Item",
    "Job",
    "LeftOut",
    "Manifest",
    "MemlineageError",
    "Memory",
    "NewEvent",
    "NotFound",
    "Output",
    "Recall",
    "RecallSet",
    "RetryPolicy",
    "SchemaTooNew",
    "StoreError",
    "SwitchFailure",
    "SwitchResult",
    "open_store",
    "render",
]
__version__ = "0.1.0"
