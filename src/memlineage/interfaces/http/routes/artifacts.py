"""Artifacts and their lineage: list and show summaries, trace them to events, audit."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from memlineage.interfaces.http.deps import Mem, known_subject

router = APIRouter()


@router.get("/v1/subjects/{subject}/artifacts")
def artifacts(subject: str, memory: Mem) -> list[dict[str, Any]]:
    """A subject's artifacts (`artifacts SUBJECT`).

    Every summary artifact of the subject with its status, coverage and gate result."""
    known_subject(memory, subject)
    return [a.to_json() for a in memory.artifacts(subject)]


@router.get("/v1/artifacts")
def tenant_artifacts(memory: Mem) -> list[dict[str, Any]]:
    """Every artifact of the tenant (`artifacts` without a subject)."""
    return [a.to_json() for a in memory.artifacts()]


@router.get("/v1/artifacts/{artifact_id}")
def artifact(artifact_id: str, memory: Mem) -> dict[str, Any]:
    """One artifact (`artifacts`).

    Its status, manifest (inputs, epoch, coverage) and gate result."""
    return memory.artifact(artifact_id).to_json()


@router.get("/v1/artifacts/{artifact_id}/lineage")
def lineage(
    artifact_id: str,
    memory: Mem,
    format: Annotated[str, Query(pattern="^(prov-json|dot|mermaid)$")] = "prov-json",
) -> Any:
    """An artifact's lineage (`lineage`).

    W3C PROV-JSON (a JSON document), or a picture as text: `dot` or `mermaid`."""
    memory.artifact(artifact_id)  # 404 for another tenant's
    doc = memory.lineage(artifact_id, format)
    return doc if isinstance(doc, dict) else PlainTextResponse(doc)


@router.get("/v1/subjects/{subject}/why")
def why(
    subject: str, memory: Mem, q: Annotated[str, Query(min_length=1, max_length=2000)]
) -> dict[str, Any]:
    """Where a claim or statement came from (`why`).

    The claims and statements matching `q` (a key or text) with their chain down to
    raw events and each event's validity."""
    known_subject(memory, subject)
    return memory.why(subject, q).to_json()


@router.get("/v1/subjects/{subject}/audit")
def audit(subject: str, memory: Mem) -> dict[str, Any]:
    """A subject's audit (`audit`).

    Artifacts with their status history, alias history, operations and erasures; every
    manifest is re-verified and `ok` is false on a mismatch (still a 200)."""
    known_subject(memory, subject)
    return memory.audit(subject).to_json()
