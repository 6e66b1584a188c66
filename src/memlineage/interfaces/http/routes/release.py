"""Release and review: the release mode, generator configurations, and the shadow queue
of candidates a reviewer approves or rejects (the JSON side of the review page)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from memlineage.interfaces.http.deps import Mem
from memlineage.interfaces.http.schemas import ConfigOut, DecisionIn, ModeIn
from memlineage.operations.release import configs_json

router = APIRouter()


@router.get("/v1/release")
def release_mode(memory: Mem) -> dict[str, Any]:
    """The tenant's release mode (`release mode`).

    `auto` publishes a summary whose gate passes; `shadow` queues it for review."""
    return {"mode": memory.release_mode()}


@router.post("/v1/release")
def set_release_mode(body: ModeIn, memory: Mem) -> dict[str, Any]:
    """Set the tenant's release mode (`release mode auto|shadow`).

    Applies to the consolidations that follow."""
    return {"mode": memory.release_mode(body.mode)}


@router.get("/v1/release/configs", response_model=list[ConfigOut])
def release_configs(memory: Mem) -> list[dict[str, Any]]:
    """The tenant's generator configuration versions (`release configs`)."""
    return configs_json(memory.configs())


@router.post("/v1/release/fail")
def release_fail(memory: Mem) -> dict[str, Any]:
    """Fail the current release (`release fail`).

    Bypass every summary of the tenant, fall back to the previous generator
    configuration, rebuild and recover forward through the compare-and-swap."""
    return memory.release_fail()


@router.get("/v1/reviews")
def reviews(
    memory: Mem, everything: Annotated[bool, Query(alias="all")] = False
) -> list[dict[str, Any]]:
    """The candidates waiting for review; `?all=true`: decided ones too (`review list`)."""
    return memory.reviews(None if everything else "pending")


@router.get("/v1/reviews/{artifact_id}")
def review(artifact_id: str, memory: Mem) -> dict[str, Any]:
    """A candidate for review (`review show`).

    The candidate beside the published summary, its must-preserve set and gate report."""
    return memory.review(artifact_id)


@router.post("/v1/reviews/{artifact_id}/approve")
def approve(artifact_id: str, body: DecisionIn, memory: Mem) -> dict[str, Any]:
    """Approve a candidate (`review approve`).

    Switches the read alias through the compare-and-swap; refused (`switched` false)
    when the alias or the epoch moved since the candidate was built."""
    return memory.approve(artifact_id, body.reviewer, body.reason).to_json()


@router.post("/v1/reviews/{artifact_id}/reject")
def reject(artifact_id: str, body: DecisionIn, memory: Mem) -> dict[str, Any]:
    """Reject a candidate (`review reject`).

    The candidate is kept, with the reviewer and the reason; nothing is published."""
    return memory.reject(artifact_id, body.reviewer, body.reason).to_json()
