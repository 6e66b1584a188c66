"""The OpenAI-compatible generator against a real HTTP server on 127.0.0.1 (tests/llm_server.py).

For every scripted answer: what is published (read back through recall, as an
agent would), what is rejected and with which code, what the repair request
carried, that a fallback is recorded, and that nothing half-finished is
recallable. No test calls a real provider.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from llm_server import (
    SNAPSHOT,
    Action,
    Doc,
    FakeServer,
    content,
    empty_body,
    loop,
    oracle,
    stall,
    status,
)
from memlineage import Memory
from memlineage.consolidation import parse
from memlineage.consolidation.generators import prompt
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.chat import ChatGenerator
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.generators.openai import (
    OpenAIConfig,
    OpenAIGenerator,
    count_tokens,
)
from memlineage.model import EVENT_KINDS, Artifact, ArtifactStatus, Event
from memlineage.operations.worker import TimeLimited, tenant_generator
from memlineage.recall.results import Recall
from memlineage.store import open_store


def event(id: str, text: str, kind: str | None = None) -> dict[str, Any]:
    return {"id": id, "subject": "user-7", "text": text, **({"kind": kind} if kind else {})}


EVENTS = [
    event("m-1", "The daily run is 5 km."),
    event("m-2", "Never deploy on Fridays.", "constraint"),
    event("m-3", "The contract is worth $4,500."),
    event("m-4", "We decided to ship on March 8, 2024.", "decision"),
    event("m-5", "We decided to ship on March 11, 2024.", "decision"),
    event("m-6", "TODO: tell the client the ship date.", "task"),
]


pytestmark = pytest.mark.usefixtures("fresh_endpoints")


@pytest.fixture
def mem(memory: Memory) -> Memory:
    memory.add(EVENTS)
    memory.conflict("m-4", "m-5", key="ship-date")
    return memory


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def make_generator(
    fake: FakeServer, sleeps: Sleeps | None = None, **config: Any
) -> OpenAIGenerator:
    settings = {"model": "fake-model", "base_url": fake.url, "timeout": 5.0, "max_retries": 2,
                "backoff": 0.5, "max_backoff": 4.0, **config}  # fmt: skip
    return OpenAIGenerator(OpenAIConfig(**settings), sleep=Sleeps() if sleeps is None else sleeps)


def consolidate(mem: Memory, fake: FakeServer, *script: Action, **config: Any) -> Artifact:
    fake.reset(*script)
    result = mem.consolidate("user-7", make_generator(fake, **config), force=True)
    return result.artifact


def by_status(mem: Memory) -> dict[ArtifactStatus, list[Artifact]]:
    found: dict[ArtifactStatus, list[Artifact]] = {}
    for artifact in mem.artifacts("user-7"):
        found.setdefault(artifact.status, []).append(artifact)
    return found


def claim_values(recalled: Recall) -> dict[str, tuple[object, str | None, bool, str]]:
    return {c.key: (c.value, c.unit, c.polarity, c.kind) for c in recalled.claims}


def key_with(recalled: Recall, fragment: str) -> str:
    return next(c.key for c in recalled.claims if fragment in c.key)


def assert_reader_sees_the_source(mem: Memory) -> Recall:
    """What an agent recalls says what the raw events say (independently of any generator)."""
    recalled = mem.recall("user-7")
    assert recalled.mode == "summary"
    claims = claim_values(recalled)
    assert claims[key_with(recalled, "daily-run")][:3] == (5, "kilometer", True)
    assert claims[key_with(recalled, "deploy")][2] is False  # never deploy on Fridays
    money = next(v for k, v in claims.items() if "/money/" in k)
    assert money[0] == 4500
    assert [c.id for c in recalled.conflicts] == ["c-1"] or len(recalled.conflicts) == 1
    assert "m-6" in recalled.open_items
    ship = [v for k, v in claims.items() if "/date/" in k and "ship" in k]
    assert ship and all(kind == "conflict" for *_, kind in ship)  # never decided by us
    return recalled


def published_only_once(mem: Memory, artifact: Artifact) -> None:
    """Exactly the final artifact is recallable; every attempt before it never is."""
    statuses = by_status(mem)
    assert [a.id for a in statuses.get(ArtifactStatus.PUBLISHED, [])] == [artifact.id]
    assert mem.recall("user-7").artifact_id == artifact.id


# ---------------------------------------------------------------------------
# a correct answer


def test_a_correct_answer_is_published_with_its_costs(mem: Memory, fake: FakeServer) -> None:
    artifact = consolidate(mem, fake, oracle())
    assert artifact.status is ArtifactStatus.CANDIDATE
    assert_reader_sees_the_source(mem)
    published_only_once(mem, artifact)
    manifest = artifact.manifest
    assert manifest.prompt_version == prompt.PROMPT_VERSION == "consolidate-v3"
    assert manifest.model_snapshot == SNAPSHOT  # what the server reported, not "fake-model"
    assert manifest.fallback is None
    [attempt] = manifest.attempts
    assert attempt["outcome"] == "passed" and attempt["modelSnapshot"] == SNAPSHOT
    assert attempt["promptVersion"] == "consolidate-v3"
    assert attempt["usage"]["promptTokens"] > 0 and attempt["usage"]["totalTokens"] > 0
    assert attempt["latencyMs"] > 0 and attempt["responseFormat"] == "json_schema"
    [request] = fake.requests
    assert request.body["model"] == "fake-model"
    assert request.body["response_format"]["type"] == "json_schema"
    schema = request.body["response_format"]["json_schema"]["schema"]
    assert "summary" not in schema["required"] and "statements" in schema["required"]
    sent = request.input()
    assert [e["id"] for e in sent["events"]] == [e["id"] for e in EVENTS]
    assert sent["unresolvedConflicts"][0]["a"] == "m-4" and sent["openItems"] == ["m-6"]
    assert sent["budget"] == manifest.budget and manifest.budget is not None


def test_temperature_and_seed_are_sent_only_when_configured(mem: Memory, fake: FakeServer) -> None:
    consolidate(mem, fake, oracle())
    assert "temperature" not in fake.requests[0].body and "seed" not in fake.requests[0].body
    consolidate(mem, fake, oracle(), temperature=0.0, seed=7)
    assert fake.requests[0].body["temperature"] == 0.0 and fake.requests[0].body["seed"] == 7


def test_a_server_without_json_schema_gets_plain_json_mode(mem: Memory, fake: FakeServer) -> None:
    fake.reset(refuse_json_schema=True)
    artifact = mem.consolidate("user-7", make_generator(fake)).artifact
    formats = [(r.body.get("response_format") or {}).get("type") for r in fake.requests]
    assert formats == ["json_schema", "json_object"]
    assert artifact.manifest.fallback is None
    assert artifact.manifest.attempts[0]["responseFormat"] == "json_object"
    assert_reader_sees_the_source(mem)


def formats_asked(fake: FakeServer) -> list[str | None]:
    return [(r.body.get("response_format") or {}).get("type") for r in fake.requests]


def test_a_llama_cpp_server_is_asked_in_json_mode_after_its_500(
    mem: Memory, fake: FakeServer
) -> None:
    """llama.cpp refuses json_schema with HTTP 500: the model is asked, not the fallback."""
    sleeps = Sleeps()
    fake.reset(flavour="llama.cpp")
    artifact = mem.consolidate("user-7", make_generator(fake, sleeps)).artifact
    assert formats_asked(fake) == ["json_schema", "json_object"]
    assert sleeps == []  # a refusal of the format is no server error to wait out
    assert artifact.manifest.fallback is None and artifact.manifest.model_snapshot == SNAPSHOT
    [attempt] = artifact.manifest.attempts
    assert attempt["responseFormat"] == "json_object"
    assert attempt["refusedFormats"] == ["json_schema"] and attempt["httpCalls"] == 2
    assert_reader_sees_the_source(mem)
    published_only_once(mem, artifact)


@pytest.mark.parametrize("flavour", ["llama.cpp", "openai"])
def test_the_working_format_is_remembered_per_endpoint_and_model(
    mem: Memory, fake: FakeServer, flavour: str
) -> None:
    fake.reset(flavour=flavour, refuse_json_schema=True)
    mem.consolidate("user-7", make_generator(fake), force=True)
    assert formats_asked(fake) == ["json_schema", "json_object"]
    fake.reset(flavour=flavour, refuse_json_schema=True)
    artifact = mem.consolidate("user-7", make_generator(fake), force=True).artifact
    assert formats_asked(fake) == ["json_object"]  # a new generator asks what worked at once
    assert artifact.manifest.attempts[0]["refusedFormats"] == []
    fake.reset(flavour=flavour, refuse_json_schema=True)
    mem.consolidate("user-7", make_generator(fake, model="other-model"), force=True)
    assert formats_asked(fake) == ["json_schema", "json_object"]  # another model: asked anew


def test_a_500_that_names_no_format_is_still_a_server_error(mem: Memory, fake: FakeServer) -> None:
    sleeps = Sleeps()
    fake.reset(status(500, "out of memory"), oracle())
    mem.consolidate("user-7", make_generator(fake, sleeps))
    assert formats_asked(fake) == ["json_schema", "json_schema"] and len(sleeps) == 1


# ---------------------------------------------------------------------------
# the token limit: always sent; an answer cut by it is split, never repaired


def test_every_request_carries_a_token_limit(mem: Memory, fake: FakeServer) -> None:
    consolidate(mem, fake, oracle(flip_polarity), oracle())  # a first answer and its repair
    consolidate(mem, fake, oracle(), max_output_tokens=3000)
    fake.reset(flavour="llama.cpp")
    mem.consolidate("user-7", make_generator(fake), force=True)
    assert len(fake.requests) == 2
    limits = [r.body.get("max_tokens") for r in fake.requests]
    assert limits == [4096, 4096]  # half the 8,192 window the server reported


def test_a_server_wanting_max_completion_tokens_gets_it(mem: Memory, fake: FakeServer) -> None:
    refusal = "Unsupported parameter: 'max_tokens' is not supported with this model. " \
        "Use 'max_completion_tokens' instead."  # fmt: skip
    artifact = consolidate(mem, fake, status(400, refusal), oracle())
    first, second = fake.requests
    assert "max_tokens" in first.body and "max_tokens" not in second.body
    assert second.body["max_completion_tokens"] == first.body["max_tokens"]
    assert artifact.manifest.fallback is None


def test_an_answer_cut_at_the_limit_is_split_not_repaired(mem: Memory, fake: FakeServer) -> None:
    artifact = consolidate(mem, fake, loop())
    assert not any(r.is_repair for r in fake.requests)  # a cut answer is never repaired
    shown = [[e["id"] for e in r.input()["events"]] for r in fake.requests]
    ids = [e["id"] for e in EVENTS]
    assert shown[0] == ids and shown[1] == ids[:3]  # the same events again, half at a time
    assert [e for chunk in shown[1:] for e in chunk] == ids
    first = artifact.manifest.attempts[0]
    assert first["outcome"] == "failed" and first["failures"] == ["generation_truncated"]
    assert first["finishReason"] == "length" and first["usage"]["completionTokens"] > 0
    [failed] = by_status(mem)[ArtifactStatus.FAILED]
    assert failed.gate.failures[0].code == "generation_truncated"
    assert artifact.manifest.fallback is None
    assert [a["outcome"] for a in artifact.manifest.attempts[1:]] == ["passed", "passed"]
    assert_reader_sees_the_source(mem)
    published_only_once(mem, artifact)


def test_a_single_event_cut_at_the_limit_falls_back(memory: Memory, fake: FakeServer) -> None:
    memory.add([EVENTS[0]])
    fake.reset(default=loop())
    artifact = memory.consolidate("user-7", make_generator(fake)).artifact
    assert len(fake.requests) == 1
    assert artifact.manifest.fallback is not None and "truncated" in artifact.manifest.fallback
    assert artifact.reason is not None and "truncated" in artifact.reason
    assert memory.recall("user-7").artifact_id == artifact.id


# ---------------------------------------------------------------------------
# the context window: configured, else reported by the endpoint, else 8,192


def test_the_window_is_asked_of_the_endpoint_once(mem: Memory, fake: FakeServer) -> None:
    fake.reset(flavour="llama.cpp", window=32768)
    artifact = mem.consolidate("user-7", make_generator(fake), force=True).artifact
    assert artifact.manifest.attempts[0]["contextTokens"] == 32768
    assert fake.requests[-1].body["max_tokens"] == 16000
    mem.consolidate("user-7", make_generator(fake), force=True)
    assert fake.models_requests == 1  # remembered per endpoint and model


def test_without_a_reported_window_the_default_is_8192(mem: Memory, fake: FakeServer) -> None:
    fake.reset()  # an OpenAI-like endpoint: /v1/models names no window
    artifact = mem.consolidate("user-7", make_generator(fake)).artifact
    assert artifact.manifest.attempts[0]["contextTokens"] == 8192
    assert fake.requests[0].body["max_tokens"] == 4096


def test_a_configured_window_wins_and_is_not_asked(mem: Memory, fake: FakeServer) -> None:
    fake.reset(flavour="llama.cpp")
    artifact = mem.consolidate(
        "user-7", make_generator(fake, context_tokens=100_000, max_output_tokens=2000)
    ).artifact
    assert fake.models_requests == 0
    assert artifact.manifest.attempts[0]["contextTokens"] == 100_000
    assert fake.requests[-1].body["max_tokens"] == 2000


def test_an_8k_window_is_chunked_so_prompt_and_answer_fit(mem: Memory, fake: FakeServer) -> None:
    review = "the weekly review covers the roadmap, the hiring plan, the office move and the " \
        "budget of the quarter. "  # fmt: skip
    name = [chr(97 + i % 26) * (1 + i // 26) for i in range(30)]  # no digits: nothing to keep
    notes = [event(f"n-{i:02d}", f"Note {name[i]}: " + review * 3) for i in range(30)]
    mem.add(notes)
    fake.reset(flavour="llama.cpp", budget=0)
    generator = make_generator(fake)
    artifact = mem.consolidate("user-7", generator).artifact
    assert len(fake.requests) >= 3  # json_schema refused, then at least two chunks
    for request in fake.requests:
        sent = sum(count_tokens(m["content"]) + 4 for m in request.messages)
        assert sent <= 8192 - request.body["max_tokens"]
    shown = [e["id"] for r in fake.requests[1:] for e in r.input()["events"]]
    assert shown == [e["id"] for e in EVENTS + notes]
    assert artifact.manifest.fallback is None
    assert_reader_sees_the_source(mem)


# ---------------------------------------------------------------------------
# mutated answers: repaired once, or rejected twice and replaced by the built-in output


def _claim(answer: Doc, fragment: str) -> Doc:
    claim: Doc = next(c for c in answer["claims"] if fragment in c["key"])
    return claim


def flip_polarity(answer: Doc, _: Doc) -> Doc:
    claim = _claim(answer, "deploy")
    claim["polarity"] = not claim["polarity"]
    return answer


def change_number(answer: Doc, _: Doc) -> Doc:
    _claim(answer, "/money/")["value"] = 4050
    return answer


def swap_unit(answer: Doc, _: Doc) -> Doc:
    _claim(answer, "daily-run")["unit"] = "mile"
    return answer


def invent_claim(answer: Doc, _: Doc) -> Doc:
    answer["claims"].append({"key": "global/number/budget", "value": 987654, "unit": None,
                             "polarity": True, "kind": "number", "derivedFrom": ["m-1"],
                             "text": "a budget of 987654"})  # fmt: skip
    return answer


def contested_as_fact(answer: Doc, _: Doc) -> Doc:
    for claim in answer["claims"]:
        if claim["kind"] == "conflict" and not claim["key"].startswith("conflict/"):
            claim["kind"] = "decision"
            claim["derivedFrom"] = claim["derivedFrom"][:1]
    return answer


def drop_statement(answer: Doc, _: Doc) -> Doc:
    answer["statements"] = [s for s in answer["statements"] if "m-2" not in s["derivedFrom"]]
    return answer


def _statement(answer: Doc, source: str) -> Doc:
    statement: Doc = next(s for s in answer["statements"] if source in s["derivedFrom"])
    return statement


def move_date(answer: Doc, _: Doc) -> Doc:
    _statement(answer, "m-2")["at"] = "2023-03-25T10:00:00Z"
    return answer


def invent_project(answer: Doc, _: Doc) -> Doc:
    _statement(answer, "m-3")["project"] = "zeus"
    return answer


def stronger_kind(answer: Doc, _: Doc) -> Doc:
    _statement(answer, "m-1")["kind"] = "constraint"
    return answer


def drop_field(answer: Doc, _: Doc) -> Doc:
    del answer["openItems"]
    return answer


def copy_items_as_given(answer: Doc, shown: Doc) -> Doc:
    """A model that gives every claim the kind of the must-preserve item it carries."""
    kinds = {(i["key"], i["source"]): i["kind"] for i in shown["mustPreserve"]}
    for claim in answer["claims"]:
        for source in claim["derivedFrom"]:
            claim["kind"] = kinds.get((claim["key"], source), claim["kind"])
    return answer


def test_a_model_copying_the_items_as_given_passes(mem: Memory, fake: FakeServer) -> None:
    """The prompt shows a conflict side's items with the kind the gate wants of their claims."""
    artifact = consolidate(mem, fake, oracle(copy_items_as_given))
    sent = fake.requests[0].input()
    items, [conflict] = sent["mustPreserve"], sent["unresolvedConflicts"]
    side = [i for i in items if i["source"] == "m-4" and i["value"] != conflict["id"]]
    assert side and all(i["kind"] == "conflict" for i in side)
    assert all(i["contested"] == conflict["id"] for i in side)
    [money] = [i for i in items if i["source"] == "m-3"]
    assert money["kind"] == "money" and "contested" not in money
    assert len(fake.requests) == 1 and artifact.manifest.fallback is None
    assert_reader_sees_the_source(mem)
    published_only_once(mem, artifact)


def test_the_prompt_schema_and_gate_agree_on_conflict_sides() -> None:
    rules = prompt.template("system.txt")
    assert 'names a side of one has "kind": "conflict"' in " ".join(rules.split())
    kind = prompt.output_schema()["properties"]["claims"]["items"]["properties"]["kind"]
    assert '"conflict" for every claim whose derivedFrom names a side' in kind["description"]


MALFORMED = '{"claims": [{"key": "global/number/daily-run", "value": 5'

# name -> (action, the rejection code, a fragment of the item it names)
MUTATIONS: dict[str, tuple[Callable[[], Action], str, str]] = {
    "polarity_flip": (lambda: oracle(flip_polarity), "polarity_flipped", "deploy"),
    "changed_number": (lambda: oracle(change_number), "value_changed", "money"),
    "unit_swapped": (lambda: oracle(swap_unit), "unit_changed", "daily-run"),
    "dropped_statement": (lambda: oracle(drop_statement), "statement_missing", "m-2"),
    "invented_claim": (lambda: oracle(invent_claim), "unsupported_claim", "global/number/budget"),
    "contested_as_fact": (lambda: oracle(contested_as_fact), "conflict_asserted", "date"),
    "moved_date": (lambda: oracle(move_date), "statement_at_unsupported", "2023-03-25"),
    "invented_project": (lambda: oracle(invent_project), "statement_project_unsupported", "zeus"),
    "stronger_kind": (lambda: oracle(stronger_kind), "statement_kind_unsupported", "constraint"),
    "missing_field": (lambda: oracle(drop_field), "parse_missing_field", "openItems"),
    "malformed_json": (lambda: content(MALFORMED), "parse_not_json", ""),
    "empty_answer": (lambda: content(""), "parse_not_json", ""),
}


def _names(artifact: Artifact, fragment: str) -> bool:
    """Some failure of the code names an item, claim or field containing ``fragment``."""
    if not fragment:
        return True
    for failure in artifact.gate.failures:
        named = failure.item + " " + failure.detail
        if fragment in named:
            return True
    return False


@pytest.mark.parametrize("name", MUTATIONS)
def test_a_rejected_answer_is_repaired_once(mem: Memory, fake: FakeServer, name: str) -> None:
    action, code, fragment = MUTATIONS[name]
    artifact = consolidate(mem, fake, action(), oracle())
    [rejected] = by_status(mem)[ArtifactStatus.REJECTED]
    assert code in {f.code for f in rejected.gate.failures}
    assert _names(rejected, fragment)
    assert rejected.manifest.attempts[0]["response"] is not None  # the answer kept for audit
    # the second request repeats the first, the rejected answer, then the failures
    first, repair = fake.requests
    assert not first.is_repair and repair.is_repair
    assert repair.messages[:2] == first.messages[:2]
    carried = repair.messages[-1]["content"]
    assert f'"code":"{code}"' in carried
    for failure in rejected.gate.failures:
        assert failure.item in carried
    # the repaired answer is published, with both attempts in its manifest
    assert artifact.status is ArtifactStatus.CANDIDATE and artifact.manifest.fallback is None
    assert artifact.manifest.model_snapshot == SNAPSHOT
    outcomes = [(a["outcome"], a["repair"]) for a in artifact.manifest.attempts]
    assert outcomes == [("rejected", False), ("passed", True)]
    assert artifact.manifest.attempts[0]["artifactId"] == rejected.id
    assert code in artifact.manifest.attempts[0]["failures"]
    assert_reader_sees_the_source(mem)
    published_only_once(mem, artifact)


@pytest.mark.parametrize("name", MUTATIONS)
def test_rejected_twice_publishes_the_builtin_output(
    mem: Memory, fake: FakeServer, name: str
) -> None:
    action, code, _ = MUTATIONS[name]
    artifact = consolidate(mem, fake, action(), action())
    rejected = by_status(mem)[ArtifactStatus.REJECTED]
    assert len(rejected) == 2
    assert all(code in {f.code for f in r.gate.failures} for r in rejected)
    # the rejected attempts were written before the artifact that replaces them
    assert all(r.created_at <= artifact.created_at or not artifact.created_at for r in rejected)
    manifest = artifact.manifest
    assert manifest.fallback is not None and code in manifest.fallback
    builtin = DeterministicGenerator()
    assert manifest.prompt_version == builtin.prompt_version
    assert manifest.model_snapshot == builtin.model_snapshot == "builtin"
    assert [a["outcome"] for a in manifest.attempts] == ["rejected", "rejected"]
    assert {a["artifactId"] for a in manifest.attempts} == {r.id for r in rejected}
    assert artifact.reason is not None and "fallback" in artifact.reason
    [published] = by_status(mem)[ArtifactStatus.PUBLISHED]  # as `artifacts` lists it
    assert published.reason == artifact.reason and code in published.reason
    assert_reader_sees_the_source(mem)
    published_only_once(mem, artifact)


# ---------------------------------------------------------------------------
# failures of the call: retried on 429 and 5xx only, then the fallback


def test_a_500_is_retried_with_backoff(mem: Memory, fake: FakeServer) -> None:
    sleeps = Sleeps()
    fake.reset(status(500), oracle())
    artifact = mem.consolidate("user-7", make_generator(fake, sleeps)).artifact
    assert len(fake.requests) == 2 and len(sleeps) == 1 and 0 < sleeps[0] <= 4.0
    assert artifact.manifest.fallback is None
    assert artifact.manifest.attempts[0]["httpCalls"] == 2
    assert_reader_sees_the_source(mem)


def test_a_429_honours_retry_after_within_the_cap(mem: Memory, fake: FakeServer) -> None:
    sleeps = Sleeps()
    fake.reset(status(429, "slow down", {"retry-after": "3"}), status(429, "slow down"), oracle())
    artifact = mem.consolidate("user-7", make_generator(fake, sleeps)).artifact
    assert len(fake.requests) == 3 and sleeps[0] == 3.0 and sleeps[1] <= 4.0
    assert artifact.manifest.fallback is None
    published_only_once(mem, artifact)


@pytest.mark.parametrize(
    ("answers", "code", "calls"),
    [
        ([status(500)] * 3, "generation_server_error", 3),
        ([status(503)] * 3, "generation_server_error", 3),
        ([status(429)] * 3, "generation_rate_limited", 3),
        ([status(400, "bad request")], "generation_refused", 1),
        ([status(400, "maximum context length is 8192 tokens")], "generation_too_large", 1),
        ([status(404, "no such model")], "generation_refused", 1),
        ([empty_body()], "generation_bad_response", 1),
    ],
    ids=["500", "503", "429", "400", "400_context", "404", "empty_body"],
)
def test_a_failing_call_falls_back(
    mem: Memory, fake: FakeServer, answers: list[Action], code: str, calls: int
) -> None:
    artifact = consolidate(mem, fake, *answers)
    assert len(fake.requests) == calls  # retries on 429 and 5xx only, max_retries = 2
    [failed] = by_status(mem)[ArtifactStatus.FAILED]
    assert [f.code for f in failed.gate.failures] == [code]
    assert failed.output is None
    manifest = artifact.manifest
    assert manifest.fallback is not None and code.removeprefix("generation_") in manifest.fallback
    assert manifest.attempts[0]["outcome"] == "failed"
    assert manifest.attempts[0]["httpCalls"] == calls
    assert manifest.attempts[0]["artifactId"] == failed.id
    assert_reader_sees_the_source(mem)
    published_only_once(mem, artifact)


def test_a_stall_past_the_timeout_falls_back_and_nothing_half_finished_is_read(
    mem: Memory, fake: FakeServer
) -> None:
    first = consolidate(mem, fake, oracle())
    mem.add([{"id": "m-7", "subject": "user-7", "text": "The backup runs at 02:00."}])
    fake.reset(stall(30))
    generator = make_generator(fake, timeout=1.0)
    done: list[Artifact] = []
    worker = threading.Thread(
        target=lambda: done.append(mem.consolidate("user-7", generator).artifact)
    )
    worker.start()
    deadline = time.monotonic() + 10
    while not fake.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake.requests, "the model was asked"
    during = mem.recall("user-7")  # the model is still thinking
    assert during.artifact_id == first.id and [e.id for e in during.tail] == ["m-7"]
    assert [a.status for a in mem.artifacts("user-7")] == [ArtifactStatus.PUBLISHED]
    worker.join(20)
    fake.release.set()
    [artifact] = done
    assert len(fake.requests) == 1  # a timeout is not retried
    [failed] = by_status(mem)[ArtifactStatus.FAILED]
    assert [f.code for f in failed.gate.failures] == ["generation_timeout"]
    assert artifact.manifest.fallback is not None and "timeout" in artifact.manifest.fallback
    published_only_once(mem, artifact)
    assert mem.recall("user-7").tail == ()


def test_the_schema_sent_is_the_parser_s(mem: Memory, fake: FakeServer) -> None:
    consolidate(mem, fake, oracle())
    schema = fake.requests[0].body["response_format"]["json_schema"]["schema"]
    assert tuple(schema["required"]) == tuple(schema["properties"]) == parse.OUTPUT_FIELDS
    claim = schema["properties"]["claims"]["items"]
    statement = schema["properties"]["statements"]["items"]
    assert tuple(claim["required"]) == tuple(claim["properties"]) == parse.CLAIM_FIELDS
    # v3 asks for the optional fields too (nullable): a chat's speaker is kept
    fields = parse.STATEMENT_FIELDS + parse.STATEMENT_OPTIONAL
    assert tuple(statement["required"]) == tuple(statement["properties"]) == fields
    assert tuple(statement["properties"]["kind"]["anyOf"][0]["enum"]) == EVENT_KINDS


def test_an_incremental_run_shows_only_the_new_events(mem: Memory, fake: FakeServer) -> None:
    first = consolidate(mem, fake, oracle())
    mem.add([event("m-7", "The backup runs at 02:00.")])
    fake.reset()
    second = mem.consolidate("user-7", make_generator(fake)).artifact
    [request] = fake.requests
    sent = request.input()
    assert [e["id"] for e in sent["events"]] == ["m-7"]
    previous = sent["previousOutput"]
    assert previous is not None and first.output is not None
    assert previous["claims"] == first.output.to_json()["claims"]
    assert second.manifest.derived_from_artifact == first.id
    assert second.manifest.fallback is None
    assert_reader_sees_the_source(mem)
    published_only_once(mem, second)


def test_a_conflict_within_the_new_events_does_not_rebuild_the_rest(
    mem: Memory, fake: FakeServer
) -> None:
    """Issue #26: a tail-only conflict moves the epoch, but nothing the parent read
    changed, so the model is shown the new events alone, with their conflict."""
    first = consolidate(mem, fake, oracle())
    mem.add([
        event("m-7", "We decided to move the office on May 4, 2025.", "decision"),
        event("m-8", "We decided to move the office on June 9, 2025.", "decision"),
    ])  # fmt: skip
    fake.reset()
    second = mem.consolidate("user-7", make_generator(fake)).artifact
    [request] = fake.requests
    sent = request.input()
    assert [e["id"] for e in sent["events"]] == ["m-7", "m-8"]
    assert sent["previousOutput"] is not None
    tail_conflicts = [c for c in sent["unresolvedConflicts"] if {c["a"], c["b"]} == {"m-7", "m-8"}]
    assert len(tail_conflicts) == 1
    assert second.manifest.derived_from_artifact == first.id
    published_only_once(mem, second)
    recalled = mem.recall("user-7")
    assert recalled.mode == "summary"
    pairs = {frozenset((c.a, c.b)) for c in recalled.conflicts}
    assert pairs == {frozenset(("m-4", "m-5")), frozenset(("m-7", "m-8"))}


def test_a_conflict_with_an_event_the_parent_read_rebuilds(mem: Memory, fake: FakeServer) -> None:
    consolidate(mem, fake, oracle())
    mem.add([event("m-7", "We decided to ship on March 20, 2024.", "decision")])
    fake.reset()
    second = mem.consolidate("user-7", make_generator(fake)).artifact
    shown = [e["id"] for r in fake.requests for e in r.input()["events"]]
    assert shown == [e["id"] for e in EVENTS] + ["m-7"]  # every event again
    assert second.manifest.derived_from_artifact is None


# ---------------------------------------------------------------------------
# chunks: a selection larger than the context, never truncated


def _small_context(fake: FakeServer, tokens: int) -> dict[str, Any]:
    """A context whose prompt has room for ``tokens`` beside the fixed part of the prompt."""
    empty = prompt.messages(GenerationRequest("user-7", (), (), (), ()))
    fixed = sum(count_tokens(m["content"]) + 4 for m in empty)
    return {"context_tokens": int((fixed + tokens) / 0.9) + 1000, "max_output_tokens": 1000}


def test_a_selection_larger_than_the_context_goes_in_chunks(mem: Memory, fake: FakeServer) -> None:
    review = "the weekly review covers the roadmap, the hiring plan and the office move. "
    filler = [event(f"n-{i}", f"Note {'abcdefgh'[i]}: " + review * 40) for i in range(8)]
    mem.add(filler)
    per_event = make_generator(fake).event_tokens(Event(**filler[0]), ())
    fake.reset(budget=0)  # the fake model leaves the long notes to cold retrieval
    generator = make_generator(fake, **_small_context(fake, 4 * per_event))
    artifact = mem.consolidate("user-7", generator).artifact
    assert len(fake.requests) >= 2
    shown = [e["id"] for r in fake.requests for e in r.input()["events"]]
    assert shown == [e["id"] for e in EVENTS + filler]  # every event once, in order
    texts = {e["id"]: e["text"] for r in fake.requests for e in r.input()["events"]}
    assert texts["n-3"] == filler[3]["text"]  # whole, never truncated
    assert fake.requests[0].input()["previousOutput"] is None
    assert all(r.input()["previousOutput"] is not None for r in fake.requests[1:])
    chunks = [a["chunk"] for a in artifact.manifest.attempts]
    assert chunks == list(range(1, len(fake.requests) + 1))
    assert artifact.manifest.fallback is None
    assert_reader_sees_the_source(mem)
    published_only_once(mem, artifact)
    # a number or an amount ranks but does not bind: at budget 0, m-1 and m-3 go cold
    # with the notes; the rule, the decisions in conflict and the open item stay hot
    cold = set(artifact.output.cold if artifact.output else ())
    assert cold == {e["id"] for e in filler} | {"m-1", "m-3"}


def test_an_event_larger_than_the_context_falls_back(mem: Memory, fake: FakeServer) -> None:
    mem.add([event("huge", "word " * 3000)])
    artifact = consolidate(mem, fake, **_small_context(fake, 1000))
    assert artifact.manifest.fallback is not None
    assert "too_large" in artifact.manifest.fallback and "huge" in artifact.manifest.fallback
    published_only_once(mem, artifact)


# ---------------------------------------------------------------------------
# the API key


SECRET = "sk-test-9f8e7d6c5b4a-never-shown"


def test_the_api_key_is_sent_but_never_shown(
    mem: Memory, fake: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    generator = make_generator(fake, api_key=SECRET)
    fake.reset(status(401, f"Incorrect API key provided: {SECRET}"))
    result = mem.consolidate("user-7", generator)
    assert fake.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    shown = [
        repr(generator),
        repr(generator.config),
        json.dumps(generator.config.to_json()),
        json.dumps(result.to_json()),
        *(json.dumps(a.to_json()) for a in mem.artifacts("user-7")),
        caplog.text,
    ]
    assert result.artifact.manifest.fallback is not None
    assert "Incorrect API key" in json.dumps([a.to_json() for a in mem.artifacts("user-7")])
    for text in shown:
        assert SECRET not in text


def test_a_worker_time_limit_bounds_each_model_call(mem: Memory, fake: FakeServer) -> None:
    generator = TimeLimited(make_generator(fake, timeout=30.0), 0.5)
    assert isinstance(generator, ChatGenerator)
    fake.reset(stall(30))
    artifact = mem.consolidate("user-7", generator).artifact
    fake.release.set()
    [failed] = by_status(mem)[ArtifactStatus.FAILED]
    assert artifact.manifest.fallback is not None
    assert "longer than 0.5 s" in artifact.manifest.fallback, artifact.manifest.fallback
    assert failed.gate.failures[0].code.startswith("generation_")
    assert_reader_sees_the_source(mem)
    published_only_once(mem, artifact)


def test_a_worker_uses_the_tenant_s_configured_generator(
    fake: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "memlineage.toml"
    config.write_text(f'[tenants.acme.generator]\nbase_url = "{fake.url}"\nmodel = "acme-model"\n')
    monkeypatch.setenv("MEMLINEAGE_CONFIG", str(config))
    store = open_store(str(tmp_path / "worker.db"))
    try:
        chosen = tenant_generator(store, "acme")
        assert isinstance(chosen, OpenAIGenerator) and chosen.config.model == "acme-model"
        assert isinstance(tenant_generator(store, "globex"), DeterministicGenerator)
    finally:
        store.close()
