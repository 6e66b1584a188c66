"""The generator seam: the deterministic built-in and LLM-backed generators fill it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from memlineage.model import Conflict, Event, Item, Output


@dataclass(frozen=True)
class GenerationRequest:
    """Everything a generator may see for one consolidation (step 4)."""

    subject: str
    events: tuple[Event, ...]
    items: tuple[Item, ...]
    conflicts: tuple[Conflict, ...]
    open_items: tuple[str, ...]
    parent: Output | None = None
    budget: int | None = None
    # The coverage of ``parent``: the events with a greater seq are the new ones
    # an incremental generator reads; the older ones are in the parent's output.
    parent_covers_through: int = 0
    # How the gate judges a statement's words: "extractive" (an event's own text) or
    # "reworded" (a tenant's opt-in, through the meaning check): consolidation/wording.py.
    wording: str = "extractive"


class Generator(Protocol):
    """Produces a raw output document; the parser and the gate decide what it is worth."""

    name: str
    prompt_version: str
    model_snapshot: str

    def generate(self, request: GenerationRequest) -> Any:
        """Return the output as plain JSON values (dicts, lists, strings, numbers)."""
        ...
