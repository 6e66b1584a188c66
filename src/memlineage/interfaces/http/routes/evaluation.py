"""Evaluation: certify a generator on the fixed samples, measure summaries against gold."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from memlineage.interfaces.http.deps import Mem
from memlineage.interfaces.http.schemas import CertificationOut, EvalIn, VerifyIn
from memlineage.operations.evaluate import gold_facts

router = APIRouter()


@router.post("/v1/verify", response_model=CertificationOut)
def verify(body: VerifyIn, memory: Mem) -> dict[str, Any]:
    """Certify a generator on the fixed samples and mutants (`verify`); `certified` is
    false where the command line exits 1."""
    return memory.verify(memory.generator(body.generator)).to_json()


@router.post("/v1/eval")
def evaluate(body: EvalIn, memory: Mem) -> dict[str, Any]:
    """Evaluate summaries (`eval`).

    Rebuilds summaries from the raw layer without switching and reports the five
    metrics; `passed` is false on a blocking finding (still a 200)."""
    gold = gold_facts(body.gold)
    return memory.eval(body.subjects, sample=body.sample, gold=gold, save=body.save).to_json()
