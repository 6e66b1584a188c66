"""What a recall returns: the subject's memory, and what it left out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memlineage.model import Claim, Conflict, Event, Statement
from memlineage.recall.context import Passage


@dataclass(frozen=True)
class LeftOut:
    """What a recall did not return: passages dropped for the budget, unmatched cold events."""

    budget_ids: tuple[str, ...] = ()  # event ids of the passages dropped for the budget
    budget_count: int = 0  # passages dropped for the budget
    cold_unmatched: int = 0  # cold events the query did not match (all of them without one)
    binding_count: int = 0  # must-keep passages among those dropped for the budget

    def to_json(self) -> dict[str, Any]:
        """The counts, and the first ``LISTED_IDS`` ids (a recall of 100 tokens over a
        subject of thousands of events must not answer with thousands of ids)."""
        return {
            "budgetIds": list(self.budget_ids[:LISTED_IDS]),
            "budgetIdsNotListed": max(0, len(self.budget_ids) - LISTED_IDS),
            "budgetCount": self.budget_count,
            "bindingCount": self.binding_count,
            "coldUnmatched": self.cold_unmatched,
        }


#: left-out ids a recall's JSON lists, the most relevant first; the rest are counted
LISTED_IDS = 20


#: the fields of a recall's JSON that a budget does not hold: sent only when asked
BEYOND_THE_BUDGET: tuple[str, ...] = ("claims", "open_items", "summary", "statements", "cold")


@dataclass(frozen=True)
class Recall:
    subject: str
    mode: str  # "summary" or "raw"
    reason: str  # why this mode
    artifact_id: str | None = None
    covers_through: int = 0
    claims: tuple[Claim, ...] = ()
    open_items: tuple[str, ...] = ()
    conflicts: tuple[Conflict, ...] = ()
    summary: str | None = None  # rendered from ``statements`` (render.render_summary)
    tail: tuple[Event, ...] = ()
    events: tuple[Event, ...] = ()
    statements: tuple[Statement, ...] = ()
    cold: tuple[str, ...] = ()  # event ids the summary left to cold retrieval
    # Recall by query within a budget (docs/recall.md). ``context`` is what the
    # agent gets, must-keep first then by relevance; with a query or a budget,
    # ``tail`` and ``events`` hold only the events that made it into the context.
    query: str | None = None
    budget: int | None = None
    context: tuple[Passage, ...] = ()
    left_out: LeftOut = LeftOut()
    tokens: int | None = None  # of the rendered context; counted when a budget is given
    over_budget: bool = False  # the budget cannot hold even the rendering's frame

    def to_json(self, *, include_claims: bool = True) -> dict[str, Any]:
        """Everything, or with a budget and ``include_claims`` False only what the budget
        allows: the context, the events in it and the conflicts, no summary or claims."""
        doc = self._json()
        if self.budget is not None and not include_claims:
            for name in BEYOND_THE_BUDGET:
                doc.pop(name)
        return doc

    def _json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "mode": self.mode,
            "reason": self.reason,
            "artifact_id": self.artifact_id,
            "covers_through": self.covers_through,
            "claims": [c.to_json() for c in self.claims],
            "open_items": list(self.open_items),
            "conflicts": [c.to_json() for c in self.conflicts],
            "summary": self.summary,
            "statements": [s.to_json() for s in self.statements],
            "cold": list(self.cold),
            "tail": [e.to_json() for e in self.tail],
            "events": [e.to_json() for e in self.events],
            "query": self.query,
            "budget": self.budget,
            "tokens": self.tokens,
            "over_budget": self.over_budget,
            "context": [p.to_json() for p in self.context],
            "left_out": self.left_out.to_json(),
        }


@dataclass(frozen=True)
class RecallSet:
    """Several subjects recalled together under one shared budget."""

    recalls: tuple[Recall, ...]
    query: str | None = None
    budget: int | None = None
    context: tuple[Passage, ...] = ()
    left_out: LeftOut = LeftOut()
    tokens: int | None = None
    over_budget: bool = False

    def to_json(self, *, include_claims: bool = True) -> dict[str, Any]:
        return {
            "subjects": [r.to_json(include_claims=include_claims) for r in self.recalls],
            "query": self.query,
            "budget": self.budget,
            "tokens": self.tokens,
            "over_budget": self.over_budget,
            "context": [p.to_json() for p in self.context],
            "left_out": self.left_out.to_json(),
        }
