"""The raw layer: append events, list them with their state, preview extraction, revoke,
re-trust, erase."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memlineage.interfaces.http.deps import Mem, known_subject
from memlineage.interfaces.http.schemas import EraseIn, EventsIn, ExtractOut, RevokeIn, TrustIn

router = APIRouter()


@router.post("/v1/events")
def add(body: EventsIn, memory: Mem) -> dict[str, Any]:
    """Append events; every event is validated first and a bad one stores nothing."""
    appended = memory.add(body.events)
    created = sum(a.created for a in appended)
    return {
        "appended": created,
        "existing": len(appended) - created,
        "events": [a.__dict__ for a in appended],
    }


@router.post("/v1/extract", response_model=ExtractOut)
def extract(body: EventsIn, memory: Mem) -> dict[str, Any]:
    """The must-preserve items of the posted events, validated as `add` does; nothing
    is stored (`extract`)."""
    return {"items": [i.to_json() for i in memory.extract(body.events)]}


@router.post("/v1/events/{event_id}/revoke")
def revoke(event_id: str, body: RevokeIn, memory: Mem) -> dict[str, Any]:
    """Revoke an event (`revoke`).

    The event leaves recall and every summary derived from it goes stale at once; the
    epoch advances. Revoking a revoked event changes nothing (`changed` false)."""
    return memory.revoke(event_id, reason=body.reason).to_json()


@router.post("/v1/events/{event_id}/trust")
def trust(event_id: str, body: TrustIn, memory: Mem) -> dict[str, Any]:
    """Change an event's trust level or taint labels (`trust`).

    `clear_taint` drops every label; summaries derived from the event go stale when its
    admission under the trust policy changes."""
    taint = [] if body.clear_taint else body.taint
    return memory.trust(event_id, level=body.level, taint=taint).to_json()


@router.post("/v1/events/{event_id}/erase")
def erase(event_id: str, body: EraseIn, memory: Mem) -> dict[str, Any]:
    """Erase an event's content everywhere it was copied (`erase`).

    A data-protection erasure: id, seq and hash stay, the text is removed from the raw
    layer, summaries and caches; descendants go stale. `reason` and `by` are recorded."""
    return memory.erase(event_id, body.reason, body.by).to_json()


@router.get("/v1/subjects/{subject}/events")
def events(subject: str, memory: Mem) -> dict[str, Any]:
    """The subject's events in seq order, each with its `state` (valid, revoked, superseded,
    lost-conflict, retired, quarantined, erased) and `why` (`events`)."""
    known_subject(memory, subject)
    return {"subject": subject, "events": [e.to_json() for e in memory.events(subject)]}
