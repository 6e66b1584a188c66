"""Rows to domain objects and back. The stored JSON was written by this package."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

from memlineage.model import (
    Artifact,
    ArtifactStatus,
    Event,
    Fact,
    GateFailure,
    GateReport,
    Manifest,
    NewEvent,
    Operation,
    OpKind,
    Output,
)

EVENT_COLUMNS = (
    "seq, id, subject, at, kind, project, trust, taint, facts, supersedes, text, hash, recorded_at,"
    " speaker"
)
#: the columns of a written row; ``speaker`` is written only by a batch that has one
# (schema 10), so that the rows of most batches are those of every earlier schema
INSERT_COLUMNS = EVENT_COLUMNS.removesuffix(", speaker")
# An artifact is its row and its status row (schema 13: staling rewrites narrow rows).
ARTIFACT_COLUMNS = "a.id, a.subject, s.status, s.reason, a.manifest, a.output, a.gate, a.created_at"
ARTIFACTS = (
    "artifacts a JOIN artifact_status s"
    " ON s.tenant = a.tenant AND s.subject = a.subject AND s.id = a.id"
)
OP_COLUMNS = "op_seq, kind, target, other, conflict_id, key, trust, taint, reason, epoch"


def event_from_row(row: Sequence[Any]) -> Event:
    """An ``events`` row (EVENT_COLUMNS) as its Event.

    Built as the dataclass's ``__init__`` would (every field, in field order), without
    its fourteen ``object.__setattr__`` calls: a recall reads about a hundred rows.
    Event has no ``__post_init__`` to skip.
    """
    (seq, id_, subject, at, kind, project, trust, taint, facts, supersedes, text, hash_) = row[:12]
    event = object.__new__(Event)
    event.__dict__.update(
        id=id_,
        subject=subject,
        text=text,
        at=at,
        kind=kind,
        project=project,
        trust=trust,
        taint=() if taint == "[]" else tuple(json.loads(taint)),
        facts=() if facts == "[]" else tuple(Fact(**f) for f in json.loads(facts)),
        supersedes=supersedes,
        speaker=row[13],
        seq=int(seq),
        hash=hash_,
        recorded_at=row[12],
    )
    return event


def op_from_row(row: Sequence[Any]) -> Operation:
    op_seq, kind, target, other, conflict_id, key, trust, taint, reason, epoch = row
    return Operation(
        op_seq=int(op_seq),
        kind=OpKind(kind),
        target=target,
        other=other,
        conflict_id=conflict_id,
        key=key,
        trust=trust,
        taint=tuple(json.loads(taint)) if taint is not None else None,
        reason=reason,
        epoch=int(epoch),
    )


def gate_from_json(data: dict[str, Any]) -> GateReport:
    return GateReport(
        passed=bool(data["passed"]),
        failures=tuple(
            GateFailure(f["code"], f["item"], f.get("detail", "")) for f in data["failures"]
        ),
        checked_items=int(data.get("checkedItems", 0)),
    )


def artifact_from_row(row: Sequence[Any]) -> Artifact:
    id_, subject, status, reason, manifest, output, gate, created_at = row
    return Artifact(
        id=id_,
        subject=subject,
        status=ArtifactStatus(status),
        manifest=Manifest.from_json(json.loads(manifest)),
        output=output_from_json(output) if output else None,
        gate=gate_from_json(json.loads(gate)),
        reason=reason,
        created_at=created_at,
    )


#: stored outputs parsed and kept per process (a summary's is some 14 KB of JSON)
OUTPUT_CACHE = 256


@functools.lru_cache(maxsize=OUTPUT_CACHE)
def output_from_json(text: str) -> Output:
    """A stored output, parsed once per text: every recall in summary mode reads its
    artifact's. A pure cache of a pure function (the text is the key, and the
    parsed output is immutable: frozen, of tuples), so nothing of the store is
    remembered."""
    return Output.from_json(json.loads(text))


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def event_row(tenant: str, event: NewEvent, seq: int, hash_: str, now: str) -> tuple[Any, ...]:
    """The ``events`` row of ``event``, in EVENT_COLUMNS order after the tenant.

    The last value is the speaker: a batch without any leaves it out (INSERT_COLUMNS).
    """
    return (
        tenant,
        seq,
        event.id,
        event.subject,
        event.at,
        event.kind,
        event.project,
        event.trust,
        dumps(list(event.taint)) if event.taint else "[]",  # most events carry neither
        dumps([f.to_json() for f in event.facts]) if event.facts else "[]",
        event.supersedes,
        event.text,
        hash_,
        now,
        event.speaker,
    )
