"""memlineage: memory consolidation for LLM agents with lineage and a fidelity gate."""

from memlineage.aio import AsyncMemory
from memlineage.api import Memory
from memlineage.consolidation.consolidate import Consolidation, Consolidations
from memlineage.errors import (
    BadInput,
    DuplicateEventId,
    MemlineageError,
    NotFound,
    SchemaTooNew,
    StoreError,
)
from memlineage.model import (
    Alias,
    Artifact,
    ArtifactStatus,
    Claim,
    Clock,
    Conflict,
    Event,
    EventState,
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
from memlineage.operations.queue import RetryPolicy
from memlineage.recall.prompt import render
from memlineage.recall.results import LeftOut, Recall, RecallSet
from memlineage.store import open_store
from memlineage.store.protocol import Job

__all__ = [
    "Alias",
    "Artifact",
    "ArtifactStatus",
    "AsyncMemory",
    "BadInput",
    "Claim",
    "Clock",
    "Conflict",
    "Consolidation",
    "Consolidations",
    "DuplicateEventId",
    "Event",
    "EventState",
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
