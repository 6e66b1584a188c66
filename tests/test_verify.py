"""``memlineage verify`` against a fake chat-completions server on 127.0.0.1.

All-correct answers certify; one mutated sample fails, and the table names it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from llm_server import Doc, FakeServer, oracle, running
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.generators.openai import OpenAIConfig, OpenAIGenerator
from memlineage.consolidation.samples import SAMPLES
from memlineage.consolidation.verify import CHECKS, verify
from memlineage.interfaces.cli import main


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with running() as server:
        yield server


def run_verify(fake: FakeServer, *extra: str) -> tuple[int, str]:
    out = io.StringIO()
    argv = ["verify", "--generator", "openai", "--base-url", fake.url, "--model", "fake-model"]
    code = main([*argv, *extra], stdout=out)
    return code, out.getvalue()


def change_the_contract_value(answer: Doc, doc: Doc) -> Doc:
    """A model that writes $4,050 for $4,500 (only the close_numbers sample says $4,500)."""
    for claim in answer["claims"]:
        if claim["value"] == 4500:
            claim["value"] = 4050
    return answer


def test_all_correct_answers_certify(fake: FakeServer) -> None:
    fake.reset()
    code, text = run_verify(fake, "--json")
    assert code == 0
    doc = json.loads(text)  # exactly one document
    assert doc["certified"] is True and doc["failedSamples"] == []
    assert len(doc["rows"]) == len(SAMPLES) * len(CHECKS)
    assert {(r["sample"], r["check"]) for r in doc["rows"]} == {
        (s.name, c) for s in SAMPLES for c in CHECKS
    }
    assert doc["totals"]["passRate"] == 1.0 and doc["totals"]["fallbacks"] == 0
    assert doc["totals"]["tokens"] > 0 and doc["totals"]["latencyMs"] > 0
    assert doc["generator"]["model"] == "fake-model"
    # the regrouped check really sent two batches, the second over the first's output
    regrouped = [r for r in fake.requests if r.input()["previousOutput"] is not None]
    assert regrouped
    unrelated = [r for r in fake.requests if any(
        e["id"].startswith("unrelated-") for e in r.input()["events"])]  # fmt: skip
    assert len(unrelated) == len(SAMPLES)


def test_one_mutated_sample_fails_and_is_named(fake: FakeServer) -> None:
    fake.reset(default=oracle(change_the_contract_value))
    code, text = run_verify(fake)
    assert code == 1
    failing = [line for line in text.splitlines() if " FAIL " in line]
    assert failing and all(line.startswith("close_numbers") for line in failing)
    assert "value_changed" in failing[0]
    assert "NOT certified: failed on close_numbers" in text
    code, text = run_verify(fake, "--json")
    doc = json.loads(text)
    assert code == 1 and doc["certified"] is False
    assert doc["failedSamples"] == ["close_numbers"]
    rows = [r for r in doc["rows"] if r["sample"] == "close_numbers"]
    assert all(not r["passed"] and r["fallback"] and r["repairs"] >= 1 for r in rows)
    assert doc["totals"]["passed"] == len(doc["rows"]) - 4


def _generator(fake: FakeServer) -> OpenAIGenerator:
    return OpenAIGenerator(OpenAIConfig(model="fake-model", base_url=fake.url, timeout=5))


def test_a_model_thrown_by_unrelated_events_fails_that_check(fake: FakeServer) -> None:
    def drop_claims_when_distracted(answer: Doc, doc: Doc) -> Doc:
        if any(e["id"].startswith("unrelated-") for e in doc["events"]):
            answer["claims"] = answer["claims"][1:]
        return answer

    fake.reset(default=oracle(drop_claims_when_distracted))
    result = verify(_generator(fake), SAMPLES[:2])
    failed = {(r.sample, r.check) for r in result.rows if not r.passed}
    assert failed == {(s.name, "unrelated_events") for s in SAMPLES[:2]}
    assert not result.passed


def test_a_model_that_answers_differently_on_a_retry_fails_that_check(fake: FakeServer) -> None:
    calls: dict[str, int] = {}

    def second_thoughts(answer: Doc, doc: Doc) -> Doc:
        """On a retry, the constraint of m-3 is also stated under the key of its number.

        The gate lets it pass (m-3 says both), but the must-preserve set changed.
        """
        key = json.dumps(doc["events"])
        calls[key] = calls.get(key, 0) + 1
        if calls[key] == 3:  # base, then retries 1 and 2 of the whole sample
            a, b = [c for c in answer["claims"] if c["derivedFrom"] == ["m-3"]][:2]
            answer["claims"].append({**b, "key": a["key"]})
        return answer

    close_numbers = [s for s in SAMPLES if s.name == "close_numbers"]
    fake.reset(default=oracle(second_thoughts))
    result = verify(_generator(fake), close_numbers)
    by_check: dict[str, Any] = {r.check: r for r in result.rows}
    assert [by_check[c].passed for c in CHECKS] == [True, True, True, False]
    assert "must-preserve set changed" in by_check["retried"].problems[0]
    assert by_check["retried"].fallback is None and not result.passed


def test_progress_reports_each_row_as_soon_as_it_is_done() -> None:
    """A row is reported once its own generations are done, not with its sample's others."""
    calls: list[int] = []

    class Counting(DeterministicGenerator):
        def generate(self, request: GenerationRequest) -> dict[str, Any]:
            calls.append(1)
            return super().generate(request)

    seen: list[tuple[str, int]] = []
    verify(Counting(), SAMPLES[:1], progress=lambda row: seen.append((row.check, len(calls))))
    assert seen == [("sample", 1), ("unrelated_events", 2), ("regrouped", 3), ("retried", 5)]


def _rewording(rewrite: Any) -> Any:
    """A model that answers the honest document with every statement's text rewritten."""

    def mutate(answer: Doc, doc: Doc) -> Doc:
        for statement in answer["statements"]:
            statement["text"] = rewrite(statement["text"])
        return answer

    return mutate


def _drop_negations(text: str) -> str:
    for negation in (" not", "n't", "never ", "no longer ", "Never ", "No, no "):
        text = text.replace(negation, "")
    return text


def _swap_comparators(text: str) -> str:
    pairs = {"under": "over", "before": "after", "at least": "at most", "over": "under"}
    words = text.split(" ")
    return " ".join(pairs.get(w, w) for w in words).replace("at least", "at most")


@pytest.mark.parametrize("wording", ["extractive", "reworded"])
@pytest.mark.parametrize(
    "rewrite, failing",
    [
        (_drop_negations, {"double_negation", "negations", "speakers", "injected_instructions"}),
        (_swap_comparators, {"close_numbers", "comparators", "revoked_sources"}),
    ],
    ids=["drops negations", "swaps comparators"],
)
def test_a_model_that_changes_meaning_in_words_is_not_certified(
    fake: FakeServer, rewrite: Any, failing: set[str], wording: str
) -> None:
    fake.reset(default=oracle(_rewording(rewrite)))
    config = OpenAIConfig(model="fake-model", base_url=fake.url, timeout=5, wording=wording)
    result = verify(OpenAIGenerator(config))
    assert not result.passed
    assert failing <= set(result.failed_samples)


def test_verify_judges_the_rendered_sentences() -> None:
    """A phrase a reader needs (written by hand per sample) that the rendered summary does
    not show fails the row, whatever the claims say; an event left to cold is exempt."""
    from dataclasses import replace

    from memlineage.consolidation.verify import _unsaid

    speakers = next(s for s in SAMPLES if s.name == "speakers")
    honest = speakers.output()
    assert _unsaid(honest, speakers) == []
    mute = replace(honest, statements=tuple(
        replace(s, speaker=None) for s in honest.statements))  # fmt: skip
    assert _unsaid(mute, speakers) == [
        "the summary does not say 'Caroline: No, no pets'",
        'the summary does not say "Melanie: I haven\'t done"',
    ]
    cold = replace(mute, cold=("m-1", "m-2"))
    assert _unsaid(cold, speakers) == []
