"""An adversary model against the gate: no reworded change of meaning is ever published.

A stub OpenAI-compatible server (tests/llm_server.py) answers the honest
document with one change of meaning (tests/adversary.py: negation,
comparison, scope, attribution and speaker, numbers in words and ids, stale
values, injection and markup, crossed values, laundering through repair), in
the extractive default and in the reworded mode, on both backends. What is
asserted is what a reader sees: the rendered summary still says the attacked
event's own words (with its speaker) and never the changed ones, and the
model's answer was not what got published.
"""

from __future__ import annotations

import pytest

from adversary import CLASSES, EVENTS, FAITHFUL, SPEAKER, SUBJECT, TEXT, Mutant, text
from llm_server import FakeServer, oracle
from memlineage import Memory
from memlineage.consolidation.generators.openai import (
    OpenAIConfig,
    OpenAIGenerator,
)
from memlineage.model import Artifact

WORDINGS = ("extractive", "reworded")


pytestmark = pytest.mark.usefixtures("fresh_endpoints")


@pytest.fixture
def mem(memory: Memory) -> Memory:
    memory.add(EVENTS)
    return memory


def generator(fake: FakeServer, wording: str) -> OpenAIGenerator:
    config = OpenAIConfig(
        model="fake-model",
        base_url=fake.url,
        timeout=5.0,
        max_retries=0,
        context_tokens=65536,
        wording=wording,
    )
    return OpenAIGenerator(config)


def run(mem: Memory, fake: FakeServer, wording: str, mutant: Mutant) -> Artifact:
    second = mutant.repair or mutant.mutate
    fake.reset(oracle(mutant.mutate), oracle(second))
    return consolidate(mem, fake, wording)


def consolidate(mem: Memory, fake: FakeServer, wording: str) -> Artifact:
    """A budget that holds every event: what the reader sees is every statement."""
    gen = generator(fake, wording)
    return mem.consolidate(SUBJECT, gen, force=True, budget=100_000).artifact


def line_of(event_id: str) -> str:
    speaker = SPEAKER[event_id]
    return f"{speaker}: {TEXT[event_id]}" if speaker else TEXT[event_id]


def test_the_honest_answer_is_published_first_try(mem: Memory, fake: FakeServer) -> None:
    for wording in WORDINGS:
        fake.reset(oracle())
        artifact = consolidate(mem, fake, wording)
        assert artifact.manifest.fallback is None, wording
        assert [a["outcome"] for a in artifact.manifest.attempts] == ["passed"]
        summary = mem.recall(SUBJECT).summary or ""
        assert "- Caroline: No, no pets right now." in summary  # the speaker kept
        assert "- I'm not allergic to penicillin." in summary


@pytest.mark.parametrize("wording", WORDINGS)
@pytest.mark.parametrize("cls", CLASSES)
def test_no_change_of_meaning_is_published(
    mem: Memory, fake: FakeServer, cls: str, wording: str
) -> None:
    published = []
    for mutant in CLASSES[cls]:
        artifact = run(mem, fake, wording, mutant)
        recalled = mem.recall(SUBJECT)
        summary = recalled.summary or ""
        if artifact.manifest.fallback is None:
            published.append(mutant.name)
        assert line_of(mutant.target) in summary, mutant.name  # its own words, its speaker
        if mutant.shown is not None:
            assert mutant.shown not in summary, mutant.name
            if cls == "injection":
                assert mutant.shown not in str(recalled.to_json()), mutant.name
    assert published == []


def test_a_repair_request_names_the_class_never_the_value(mem: Memory, fake: FakeServer) -> None:
    fake.reset(oracle(text("p14", "My salary is $54,000.")), oracle())
    consolidate(mem, fake, "reworded")
    repair = fake.requests[1].messages[-1]["content"]
    assert '"code":"statement_meaning_changed"' in repair and "number" in repair
    assert "45,000" not in repair and "45000" not in repair


def test_faithful_rewordings_in_the_reworded_mode(mem: Memory, fake: FakeServer) -> None:
    """Each rewording alone: published when every marker is kept, refused otherwise."""
    outcomes = {}
    for target, new in FAITHFUL:
        fake.reset(oracle(text(target, new)), oracle(text(target, new)))
        artifact = consolidate(mem, fake, "reworded")
        outcomes[new] = artifact.manifest.fallback is None
        if outcomes[new]:
            assert new in (mem.recall(SUBJECT).summary or "")
    refused = [new for new, passed in outcomes.items() if not passed]
    # the check is strict: words said otherwise and synonyms are refused, not guessed
    assert refused == [
        "I take the pill twice per day.",  # 'per' said where the event has none
        "The deadline is at least 2 weeks away.",  # a digit no claim carries ('two' is none)
        "I don't smoke any longer.",
        "I like tea more than coffee.",
        "I am employed as a data engineer.",
    ]
