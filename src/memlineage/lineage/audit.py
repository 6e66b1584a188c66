"""Audit of one subject and ``why``: where a piece of memory came from. Pure over a history.

``audit`` lists every artifact with each status it took and why, the alias
history, every raw-layer operation (detected conflicts and erasures included),
and re-verifies each stored manifest's ``inputRoot`` against the raw layer: the
hash of the canonical list of its input ids with the hashes stored now. An
erased event keeps its hash, so erasure never breaks a manifest; anything else
that changed an input (or lost it) is a mismatch, and a mismatch fails the audit.
So does an erased event that still has a vector (embeddings are derived from
its text; erasure deletes them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memlineage.canonical import input_root
from memlineage.consolidation.alias import why_not_summary
from memlineage.meaning.updates import find_updates
from memlineage.model import Artifact, Event
from memlineage.raw.validity import source_state
from memlineage.store.protocol import Head, SubjectHistory


@dataclass(frozen=True)
class ManifestCheck:
    artifact_id: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"artifact_id": self.artifact_id, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True)
class Audit:
    subject: str
    doc: dict[str, Any]
    checks: tuple[ManifestCheck, ...]
    erased_vectors: tuple[str, ...] = ()  # erased events that still have a vector
    erased_items: tuple[str, ...] = ()  # erased events that still have stored items

    @property
    def ok(self) -> bool:
        leftovers = self.erased_vectors or self.erased_items
        return all(c.ok for c in self.checks) and not leftovers

    def to_json(self) -> dict[str, Any]:
        return {
            **self.doc,
            "manifests": [c.to_json() for c in self.checks],
            "erased_vectors": list(self.erased_vectors),
            "erased_items": list(self.erased_items),
            "ok": self.ok,
        }


def verify_manifest(artifact: Artifact, events: dict[str, Event]) -> ManifestCheck:
    """Recompute inputRoot from the stored (id, hash) of each input."""
    manifest = artifact.manifest
    missing = [i for i in manifest.input_ids if i not in events]
    if missing:
        return ManifestCheck(artifact.id, False, f"input {missing[0]} is not in the raw layer")
    root = input_root((i, events[i].hash) for i in manifest.input_ids)
    if root != manifest.input_root:
        return ManifestCheck(
            artifact.id, False, f"inputRoot {manifest.input_root} != recomputed {root}"
        )
    return ManifestCheck(artifact.id, True, f"inputRoot verified over {len(manifest.input_ids)}")


def audit(history: SubjectHistory) -> Audit:
    events = {e.id: e for e in history.events}
    checks = tuple(verify_manifest(a, events) for a in history.artifacts)
    doc = {
        "subject": history.subject,
        "clock": {"high_water": history.clock.high_water, "epoch": history.clock.epoch},
        "alias": {
            "artifact_id": history.alias.artifact_id or None,
            "source_epoch": history.alias.source_epoch,
            "covers_through": history.alias.covers_through,
            "bypassed": history.alias.bypassed,
        },
        "artifacts": [
            {
                "artifact_id": a.id,
                "status": str(a.status),
                "reason": a.reason,
                "created_at": a.created_at,
                "history": [s.to_json() for s in history.statuses.get(a.id, ())],
            }
            for a in history.artifacts
        ],
        "alias_history": [s.to_json() for s in history.switches],
        "operations": [
            {
                "op_seq": op.op_seq,
                "kind": str(op.kind),
                "target": op.target,
                "other": op.other,
                "conflict_id": op.conflict_id,
                "key": op.key,
                "trust": op.trust,
                "taint": list(op.taint) if op.taint is not None else None,
                "reason": op.reason,
                "epoch": op.epoch,
            }
            for op in history.operations
        ],
        "erasures": [e.to_json() for e in history.erasures],
    }
    return Audit(history.subject, doc, checks, history.erased_vectors, history.erased_items)


def audit_text(report: Audit) -> str:
    doc = report.doc
    lines = [
        f"subject {report.subject}: H={doc['clock']['high_water']} epoch={doc['clock']['epoch']}"
        f", alias -> {doc['alias']['artifact_id'] or '-'}"
    ]
    checks = {c.artifact_id: c for c in report.checks}
    for artifact in doc["artifacts"]:
        check = checks[artifact["artifact_id"]]
        mark = "ok" if check.ok else f"MISMATCH: {check.detail}"
        lines.append(f"artifact {artifact['artifact_id']} [{artifact['status']}] manifest {mark}")
        for change in artifact["history"]:
            why = f" ({change['reason']})" if change["reason"] else ""
            lines.append(f"  {change['at']}  {change['status']}{why}")
    for switch in doc["alias_history"]:
        lines.append(
            f"switch {switch['switch_no']}: -> {switch['artifact_id']}"
            f" covers {switch['covers_through']} at {switch['switched_at']}"
        )
    for op in doc["operations"]:
        other = f" / {op['other']}" if op["other"] else ""
        why = f" ({op['reason']})" if op["reason"] else ""
        lines.append(f"op {op['op_seq']}: {op['kind']} {op['target']}{other}{why}")
    for erased in doc["erasures"]:
        lines.append(f"erased {erased['event_id']} by {erased['erased_by']}: {erased['reason']}")
    for event_id in report.erased_vectors:
        lines.append(f"LEFTOVER: erased {event_id} still has a vector")
    for event_id in report.erased_items:
        lines.append(f"LEFTOVER: erased {event_id} still has stored items")
    return "\n".join(lines)


# -- why --


@dataclass(frozen=True)
class Why:
    """Where matching claims or statements came from, down to raw events."""

    subject: str
    query: str
    artifact_id: str | None
    artifact_status: str | None
    matches: tuple[dict[str, Any], ...]

    @property
    def found(self) -> bool:
        return bool(self.matches)

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "query": self.query,
            "artifact_id": self.artifact_id,
            "artifact_status": self.artifact_status,
            "matches": list(self.matches),
        }


def why(history: SubjectHistory, query: str) -> Why:
    """Claims whose key is ``query`` or whose text holds it, and statements holding it.

    Looks in the artifact the alias points to (else the newest artifact with
    an output), then, if nothing there matches, in the raw events themselves.
    """
    state = source_state(history.events, history.operations)
    events = {e.id: e for e in history.events}
    relation = _update_relation([e for e in history.events if e.id not in state.invalid])

    def chain(ids: tuple[str, ...]) -> list[dict[str, Any]]:
        return [
            {
                "event_id": i,
                "seq": events[i].seq if i in events else None,
                "text": events[i].text if i in events else None,
                "at": events[i].at if i in events else None,
                "validity": state.invalid.get(i, "valid") if i in events else "missing",
                **relation.get(i, {}),
            }
            for i in ids
        ]

    artifact = _artifact_for_why(history)
    needle = query.casefold()
    matches: list[dict[str, Any]] = []
    if artifact is not None and artifact.output is not None:
        for claim in artifact.output.claims:
            if claim.key == query or (needle and needle in claim.text.casefold()):
                matches.append({"claim": claim.to_json(), "chain": chain(claim.derived_from)})
        for statement in artifact.output.statements:
            if needle and needle in statement.text.casefold():
                matches.append(
                    {"statement": statement.to_json(), "chain": chain(statement.derived_from)}
                )
    if not matches:
        for event in history.events:
            if needle and needle in event.text.casefold():
                matches.append({"event": event.id, "chain": chain((event.id,))})
    return Why(
        history.subject,
        query,
        artifact.id if artifact else None,
        str(artifact.status) if artifact else None,
        tuple(matches),
    )


def _update_relation(valid: list[Event]) -> dict[str, dict[str, Any]]:
    """Per event, the derived update relation it is part of (meaning/updates.py): the
    later event that updates it (``updated_by``) and those it updates (``updates``),
    each with the rule that found it. Derived again here: it is never stored."""
    found = find_updates(sorted(valid, key=lambda e: e.seq))
    relation: dict[str, dict[str, Any]] = {}
    for older, update in found.items():
        relation.setdefault(older, {})["updated_by"] = {
            "event_id": update.newer, "rule": update.rule, "on": update.slot,
        }  # fmt: skip
        link = {"event_id": older, "rule": update.rule, "on": update.slot}
        relation.setdefault(update.newer, {}).setdefault("updates", []).append(link)
    return relation


def _artifact_for_why(history: SubjectHistory) -> Artifact | None:
    by_id = {a.id: a for a in history.artifacts}
    current = by_id.get(history.alias.artifact_id)
    head = Head(history.clock, history.alias, current)
    if current is not None and why_not_summary(head) is None:
        return current
    with_output = [a for a in history.artifacts if a.output is not None]
    return with_output[-1] if with_output else current


def why_text(result: Why) -> str:
    if not result.found:
        return f"nothing in {result.subject} matches {result.query!r}"
    lines = []
    if result.artifact_id:
        lines.append(f"in {result.artifact_id} [{result.artifact_status}]")
    for match in result.matches:
        if "claim" in match:
            lines.append(f"claim {match['claim']['key']}: {match['claim']['text']}")
        elif "statement" in match:
            lines.append(f"statement: {match['statement']['text']}")
        else:
            lines.append(f"raw event {match['event']}")
        for link in match["chain"]:
            lines.append(
                f"  <- {link['event_id']} (seq {link['seq']}, at {link['at'] or '-'},"
                f" {link['validity']}): {link['text']}"
            )
            if "updated_by" in link:
                by = link["updated_by"]
                lines.append(f"     updated by {by['event_id']} ({by['rule']} on {by['on']!r})")
            for older in link.get("updates", ()):
                lines.append(
                    f"     updates {older['event_id']} ({older['rule']} on {older['on']!r})"
                )
    return "\n".join(lines)
