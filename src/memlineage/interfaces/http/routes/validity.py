"""Validity: conflicts between events (record, resolve, dismiss, detect) and the policies
that decide them (temporal rules, trust)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memlineage.interfaces.http.deps import Mem
from memlineage.interfaces.http.schemas import (
    ConflictIn,
    DetectionOut,
    DismissIn,
    PolicyOut,
    PolicyVersionOut,
    ResolveIn,
    TemporalIn,
    TemporalOut,
    TrustChangeOut,
    TrustPolicyIn,
)
from memlineage.meaning.policy import versioned_json
from memlineage.store.protocol import trust_change_json

router = APIRouter()


@router.post("/v1/conflicts")
def conflict(body: ConflictIn, memory: Mem) -> dict[str, Any]:
    """Declare a conflict between two events (`conflict`).

    Both events belong to one subject; `key` names what they disagree on. The tenant's
    temporal policy decides it, or `resolve` does."""
    return memory.conflict(body.a, body.b, key=body.key).to_json()


@router.post("/v1/conflicts/{conflict_id}/resolve")
def resolve(conflict_id: str, body: ResolveIn, memory: Mem) -> dict[str, Any]:
    """Resolve a conflict (`resolve`).

    `winner` is one side; the other becomes invalid and summaries citing it go stale."""
    return memory.resolve(conflict_id, winner=body.winner).to_json()


@router.post("/v1/conflicts/{conflict_id}/dismiss")
def dismiss(conflict_id: str, body: DismissIn, memory: Mem) -> dict[str, Any]:
    """Dismiss a conflict (`dismiss`).

    Takes back a detected or declared conflict: both sides count again."""
    return memory.dismiss(conflict_id, body.reason).to_json()


@router.post("/v1/subjects/{subject}/detect", response_model=DetectionOut)
def detect(subject: str, memory: Mem) -> dict[str, Any]:
    """Run the subject's contradiction detection now (`detect`); it runs after every add."""
    return memory.detect(subject).to_json()


@router.get("/v1/policy", response_model=PolicyOut)
def policy(memory: Mem) -> dict[str, Any]:
    """The tenant's temporal and trust policies (`policy show`)."""
    return memory.policy()


@router.get("/v1/policy/history", response_model=list[PolicyVersionOut])
def policy_history(memory: Mem) -> list[dict[str, Any]]:
    """Every stored policy version (`policy history`); version 1 is the built-in default."""
    return [v.to_json() for v in memory.policy_history()]


@router.post("/v1/policy/temporal", response_model=TemporalOut)
def temporal_policy(body: TemporalIn, memory: Mem) -> dict[str, Any]:
    """A new temporal policy version (`policy temporal`), for conflicts detected from now."""
    return versioned_json(memory.set_temporal_policy(body.rules, body.reason))


@router.post("/v1/policy/trust", response_model=TrustChangeOut)
def trust_policy(body: TrustPolicyIn, memory: Mem) -> dict[str, Any]:
    """A new trust policy version, rolled out to every subject in batches (`policy trust`)."""
    stored, rounds = memory.set_trust_policy(
        body.admit,
        body.block,
        block_any=body.block_any_taint,
        reason=body.reason,
        batch=body.batch,
    )
    return trust_change_json(stored, rounds)
