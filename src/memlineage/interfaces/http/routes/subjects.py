"""Subjects: list them, consolidate one, recall one or several, render a recall as text."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from memlineage.interfaces.http.deps import Mem, known_subject
from memlineage.interfaces.http.schemas import ConsolidateIn
from memlineage.recall.prompt import render

router = APIRouter()

Text = Annotated[str | None, Query(max_length=2000)]
Budget = Annotated[int | None, Query(ge=1, le=1_000_000)]


@router.get("/v1/subjects")
def subjects(memory: Mem) -> list[str]:
    return memory.subjects()


@router.post("/v1/subjects/{subject}/consolidate")
def consolidate(subject: str, body: ConsolidateIn, memory: Mem) -> dict[str, Any]:
    known_subject(memory, subject)
    return memory.consolidate(subject, force=body.force, budget=body.budget).to_json()


@router.get("/v1/subjects/{subject}/recall")
def recall(subject: str, memory: Mem, query: Text = None, budget: Budget = None) -> dict[str, Any]:
    known_subject(memory, subject)
    return memory.recall(subject, query=query, budget=budget).to_json()


@router.get("/v1/recall")
def recall_several(
    memory: Mem,
    subject: Annotated[list[str], Query(min_length=1, max_length=100)],
    query: Text = None,
    budget: Budget = None,
) -> dict[str, Any]:
    """`recall` of several subjects (`?subject=a&subject=b`) sharing one budget."""
    for name in subject:
        known_subject(memory, name)
    return memory.recall(query=query, budget=budget, subjects=subject).to_json()


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
    return render(memory.recall(subject, query=query, budget=budget), format)
