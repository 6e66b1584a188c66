"""Subjects: list them, consolidate one, recall one or several, render a recall as text."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from memlineage.interfaces.http.deps import Mem, known_subject
from memlineage.interfaces.http.schemas import ConsolidateIn
from memlineage.operations import metrics
from memlineage.recall.prompt import render

router = APIRouter()

Text = Annotated[str | None, Query(max_length=2000)]
Budget = Annotated[int | None, Query(ge=1, le=1_000_000)]


@router.get("/v1/subjects")
def subjects(memory: Mem) -> list[str]:
    """The tenant's subjects.

    Every subject with at least one event, sorted; the command line does not list them."""
    return memory.subjects()


@router.post("/v1/subjects/{subject}/consolidate")
def consolidate(subject: str, memory: Mem, body: ConsolidateIn | None = None) -> dict[str, Any]:
    """Consolidate a subject (`consolidate`).

    Generate a summary, run the fidelity gate and switch the read alias when it passes
    (release mode auto; shadow mode queues it for review). The body is optional:
    `force` builds a new artifact even when up to date, `budget` is the token budget
    of this run."""
    known_subject(memory, subject)
    body = body or ConsolidateIn()
    started = time.perf_counter()
    result = memory.consolidate(subject, force=body.force, budget=body.budget)
    metrics.consolidated(memory.tenant, result, time.perf_counter() - started)
    return result.to_json()


@router.get("/v1/subjects/{subject}/recall")
def recall(
    subject: str,
    memory: Mem,
    query: Text = None,
    budget: Budget = None,
    include_claims: bool = False,
) -> dict[str, Any]:
    """Recall a subject (`recall`).

    The fresh summary plus the raw tail, or the valid raw events; with `query` and
    `budget`, the binding part first, then whole events ranked by relevance until the
    token budget, and only what the budget allows (the context); the claims only
    with `include_claims`."""
    known_subject(memory, subject)
    with metrics.timed_recall("recall", memory.tenant, [subject]):
        recalled = memory.recall(subject, query=query, budget=budget)
    return recalled.to_json(include_claims=include_claims)


@router.get("/v1/recall")
def recall_several(
    memory: Mem,
    subject: Annotated[list[str], Query(min_length=1, max_length=100)],
    query: Text = None,
    budget: Budget = None,
    include_claims: bool = False,
) -> dict[str, Any]:
    """`recall` of several subjects (`?subject=a&subject=b`) sharing one budget."""
    for name in subject:
        known_subject(memory, name)
    with metrics.timed_recall("recall_several", memory.tenant, subject):
        recalled = memory.recall(query=query, budget=budget, subjects=subject)
    return recalled.to_json(include_claims=include_claims)


@router.get("/v1/subjects/{subject}/context", response_class=PlainTextResponse)
def context(
    subject: str,
    memory: Mem,
    query: Text = None,
    budget: Budget = None,
    format: Annotated[str, Query(pattern="^(markdown|text)$")] = "markdown",
) -> str:
    """The recall rendered as text an agent puts in its prompt."""
    known_subject(memory, subject)
    with metrics.timed_recall("context", memory.tenant, [subject]):
        return render(memory.recall(subject, query=query, budget=budget), format)
