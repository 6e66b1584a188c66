"""Recall (I4, I5): the published summary plus the raw tail when it is fresh, raw otherwise.

A summary is used only when the alias's epoch equals the clock's, the artifact
it points to is published (not stale, rejected, failed or a mere candidate),
and the subject is not bypassed. Anything else falls back to the valid raw
events with their unresolved conflicts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .model import ArtifactStatus, Claim, Conflict, Event, Statement
from .render import render_summary
from .select import TrustPolicy, source_state
from .store.protocol import Head, Reader


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

    def to_json(self) -> dict[str, Any]:
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
        }


def why_not_summary(head: Head | None) -> str | None:
    """None when the alias may serve recall (I4); otherwise the reason it may not."""
    if head is None:
        return "no events for this subject"
    alias, artifact = head.alias, head.artifact
    if not alias.artifact_id or artifact is None:
        return "no summary published yet"
    if alias.bypassed:
        return "summary bypassed"
    if alias.source_epoch != head.clock.epoch:
        return f"summary epoch {alias.source_epoch} != source epoch {head.clock.epoch}"
    if artifact.status is not ArtifactStatus.PUBLISHED or artifact.output is None:
        return f"artifact {artifact.id} is {artifact.status}"
    return None


def recall(reader: Reader, subject: str, policy: TrustPolicy) -> Recall:
    """Read one subject's memory inside one snapshot (the reader's transaction)."""
    head = reader.head(subject)
    reason = why_not_summary(head)
    if head is None:
        return Recall(subject, "raw", reason or "")
    ops = reader.operations(subject)
    if reason is None:
        assert head.artifact is not None and head.artifact.output is not None
        output = head.artifact.output
        covered = head.alias.covers_through
        tail = reader.events(subject, after=covered)
        state = source_state(tail, ops, policy)
        by_id = state.conflicts
        return Recall(
            subject,
            "summary",
            "summary is fresh",
            artifact_id=head.artifact.id,
            covers_through=covered,
            claims=output.claims,
            open_items=output.open_items,
            conflicts=tuple(by_id[c] for c in output.unresolved_conflicts if c in by_id),
            summary=render_summary(output.statements),
            tail=tuple(e for e in tail if state.is_valid(e)),
            statements=output.statements,
            cold=output.cold,
        )
    events = reader.events(subject)
    state = source_state(events, ops, policy)
    valid = tuple(e for e in events if state.is_valid(e))
    ids = {e.id for e in valid}
    conflicts = tuple(c for c in state.unresolved if c.a in ids and c.b in ids)
    return Recall(subject, "raw", reason, conflicts=conflicts, events=valid)
