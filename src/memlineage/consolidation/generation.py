"""Steps 4–6 with a model: generate, parse, gate, repair once, fall back.

For the built-in generator (or any plain :class:`Generator`) this is one call,
parsed and gated. For a :class:`ChatGenerator` (a model behind an API):

1. The selection is sent whole when its prompt fits the model's context, and
   otherwise in chunks, in order: each chunk is the events that fit beside
   the output of the chunks before it (an incremental run over that output
   as its parent). Nothing is truncated; an event too large to fit alone
   fails the generation.
2. Each answer is parsed and gated against everything consolidated so far.
3. Bounded repair: a rejected answer is asked for once more, with the failure
   codes and the items, claims and events they name. An answer cut at the
   token limit (``finish_reason: "length"``) is not repaired: its events are
   asked for again in chunks of half as many (one event: the fallback).
4. When the repair is rejected too, or a call fails (timeout, 429 or 5xx after
   the retries, a refused request), every attempt is kept as its own
   artifact, ``rejected`` with its gate report (``failed`` when there was no
   answer to judge), and the built-in generator's output over the whole
   selection is what is published; the manifest says why in ``fallback``.

Every attempt leaves a record for the manifest: prompt version, the model
name the server reported, token usage, latency, outcome and failure codes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memlineage.consolidation import collector, gate, gate_delta, parse
from memlineage.consolidation.generators.base import GenerationRequest, Generator
from memlineage.consolidation.generators.chat import (
    ChatGenerator,
    Completion,
    GenerationFailed,
    Repair,
)
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.wording import wording_of
from memlineage.model import (
    Artifact,
    ArtifactStatus,
    GateFailure,
    GateReport,
    Item,
    Manifest,
    Output,
)

GENERATION_FAILED = "generation failed"
#: the failure code of an answer cut at the token limit (finish_reason "length")
TRUNCATED = "generation_truncated"
#: attempts per chunk: the first answer and one repair
MAX_ATTEMPTS = 2


@dataclass(frozen=True)
class Attempt:
    """One answer of a model (or one failed call), judged."""

    record: dict[str, Any]  # what the manifest keeps of it
    output: Output | None
    report: GateReport
    model_snapshot: str
    response: str | None = None  # the answer's text, kept on its rejected artifact

    @property
    def passed(self) -> bool:
        return self.report.passed

    @property
    def status(self) -> ArtifactStatus:
        if self.passed:
            return ArtifactStatus.CANDIDATE
        return ArtifactStatus.REJECTED if self.response is not None else ArtifactStatus.FAILED


@dataclass(frozen=True)
class Generated:
    """The output to write (judged), every model attempt, and why a fallback was taken."""

    output: Output | None
    report: GateReport
    reason: str | None
    status: ArtifactStatus
    prompt_version: str
    model_snapshot: str
    attempts: tuple[Attempt, ...] = ()
    fallback: str | None = None


def judge(raw: object, scope: GenerationRequest) -> tuple[Output | None, GateReport]:
    """Parse and gate one answer against a scope (events, items, conflicts, open items)."""
    with collector.paused():  # bounded by the scope's size, unlike a model's answer
        try:
            output = parse.parse_output(raw)
        except parse.OutputRejected as exc:
            failure = GateFailure(f"parse_{exc.code}", exc.field, str(exc))
            return None, GateReport(False, (failure,))
        return output, judge_output(output, scope)


def judge_output(output: Output, scope: GenerationRequest) -> GateReport:
    """Gate an output that is already typed (the built-in generator's) against a scope."""
    with collector.paused():
        return gate_delta.check(
            scope.items,
            scope.conflicts,
            scope.open_items,
            output,
            scope.events,
            scope.parent,
            wording=scope.wording,
        )


def generate(
    generator: Generator,
    request: GenerationRequest,
    *,
    max_events_per_chunk: int | None = None,
) -> Generated:
    """Run a generator over a request and judge it; models get repair, chunks and fallback.

    ``max_events_per_chunk`` regroups the selection into smaller batches even
    when it would fit (``verify`` uses it to check that grouping changes nothing).
    The generator's configuration says how its statements' words are judged.
    """
    wording = wording_of(generator)
    if request.wording != wording:
        request = replace(request, wording=wording)
    if isinstance(generator, ChatGenerator):
        return _generate_with_model(generator, request, max_events_per_chunk)
    return _generate_once(generator, request)


def _generate_once(generator: Generator, request: GenerationRequest) -> Generated:
    def done(output: Output | None, report: GateReport, reason: str | None) -> Generated:
        if report.passed:
            status = ArtifactStatus.CANDIDATE
        elif reason == GENERATION_FAILED:
            status = ArtifactStatus.FAILED
        else:
            status = ArtifactStatus.REJECTED
        return Generated(
            output, report, reason, status, generator.prompt_version, generator.model_snapshot
        )

    builtin = generator if type(generator) is DeterministicGenerator else None
    try:  # the built-in's output is typed already: no JSON round trip
        answer = builtin.output(request) if builtin else generator.generate(request)
    except Exception as exc:  # a generator is foreign code: its crash fails the artifact
        failure = GateFailure("generation_failed", generator.name, f"{type(exc).__name__}: {exc}")
        return done(None, GateReport(False, (failure,)), GENERATION_FAILED)
    if builtin:
        output, report = answer, judge_output(answer, request)
    else:
        output, report = judge(answer, request)
    if output is None:
        return done(None, report, "output rejected by the parser")
    return done(output, report, None if report.passed else "gate failed")


# ---------------------------------------------------------------------------
# models: chunks, repair, fallback


class _Fallback(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class _Truncated(Exception):
    """The answer hit the token limit: ask again with at most ``events`` events per chunk."""

    def __init__(self, events: int) -> None:
        self.events = events
        super().__init__(events)


def _generate_with_model(
    generator: ChatGenerator, request: GenerationRequest, max_events: int | None
) -> Generated:
    attempts: list[Attempt] = []
    try:
        output = _chunked(generator, request, max_events, attempts)
    except _Fallback as fallback:
        return _fall_back(request, tuple(attempts), fallback.reason)
    last = attempts[-1]
    return Generated(
        output,
        last.report,
        None,
        ArtifactStatus.CANDIDATE,
        generator.prompt_version,
        last.model_snapshot,
        tuple(attempts),
    )


def _chunked(
    generator: ChatGenerator,
    request: GenerationRequest,
    max_events: int | None,
    attempts: list[Attempt],
) -> Output:
    """The new events in as few chunks as fit, each over the output of the ones before.

    The events a fresh parent already covers are in its output; the model is
    shown only the events after its coverage. Every answer is judged against
    all events up to the end of its chunk.
    """
    events = request.events
    items_by_source: dict[str, list[Item]] = {}
    for item in request.items:
        if item.kind != gate.CONFLICT_KIND:
            items_by_source.setdefault(item.source, []).append(item)
    start = 0
    if request.parent is not None and request.parent_covers_through > 0:
        start = sum(1 for e in events if e.seq <= request.parent_covers_through)
    parent, chunk = request.parent, 0
    if max_events is None:
        shown, scope = _chunk_requests(request, items_by_source, start, len(events), parent)
        if generator.fits(shown):
            try:
                return _repaired(generator, shown, scope, 1, attempts)
            except _Truncated as cut:
                max_events = cut.events
    while start < len(events) or chunk == 0:
        chunk += 1
        end = _chunk_end(generator, request, items_by_source, start, parent, max_events)
        shown, scope = _chunk_requests(request, items_by_source, start, end, parent)
        try:
            parent = _repaired(generator, shown, scope, chunk, attempts)
        except _Truncated as cut:  # the same events again, in smaller chunks
            max_events, chunk = cut.events, chunk - 1
            continue
        start = end
    assert parent is not None
    return parent


def _chunk_end(
    generator: ChatGenerator,
    request: GenerationRequest,
    items_by_source: dict[str, list[Item]],
    start: int,
    parent: Output | None,
    max_events: int | None,
) -> int:
    """The end of the longest run of events from ``start`` that fits beside ``parent``."""
    empty, _ = _chunk_requests(request, items_by_source, start, start, parent)
    used = generator.prompt_tokens(empty)
    limit = generator.input_token_limit()
    end = start
    while end < len(request.events) and (max_events is None or end - start < max_events):
        event = request.events[end]
        used += generator.event_tokens(event, items_by_source.get(event.id, ()))
        if used > limit:
            break
        end += 1
    if end == start and (start < len(request.events) or used > limit):
        what = f"event {request.events[start].id}" if start < len(request.events) else "it"
        raise _Fallback(
            f"too_large: {what} does not fit in the model's context beside "
            f"{'the output so far' if parent is not None else 'the prompt'} "
            f"({used} of {limit} prompt tokens); nothing is truncated"
        )
    return end


def _chunk_requests(
    request: GenerationRequest,
    items_by_source: dict[str, list[Item]],
    start: int,
    end: int,
    parent: Output | None,
) -> tuple[GenerationRequest, GenerationRequest]:
    """What the model is shown for events[start:end], and what its answer is judged against.

    The answer must cover everything so far (the parent's events too), so the
    scope is the selection up to ``end``; a conflict is in scope once both of
    its sides are.
    """
    so_far = request.events[:end]
    ids = {e.id for e in so_far}
    conflicts = tuple(c for c in request.conflicts if c.a in ids and c.b in ids)
    in_scope = {c.id for c in conflicts}
    conflict_items = tuple(
        i for i in request.items if i.kind == gate.CONFLICT_KIND and str(i.value) in in_scope
    )
    new = request.events[start:end]
    new_ids = {e.id for e in new}
    shown = replace(
        request,
        events=new,
        items=tuple(i for e in new for i in items_by_source.get(e.id, ())) + conflict_items,
        conflicts=conflicts,
        open_items=tuple(o for o in request.open_items if o in new_ids),
        parent=parent,
    )
    scope = replace(
        request,
        events=so_far,
        items=tuple(i for e in so_far for i in items_by_source.get(e.id, ())) + conflict_items,
        conflicts=conflicts,
        open_items=tuple(o for o in request.open_items if o in ids),
        parent=parent,
    )
    return shown, scope


def _repaired(
    generator: ChatGenerator,
    shown: GenerationRequest,
    scope: GenerationRequest,
    chunk: int,
    attempts: list[Attempt],
) -> Output:
    """Ask, judge, and ask once more with the failures; raise _Fallback when still rejected."""
    repair: Repair | None = None
    for number in range(1, MAX_ATTEMPTS + 1):
        base = {
            "attempt": len(attempts) + 1,
            "chunk": chunk,
            "events": len(shown.events),
            "repair": repair is not None,
            "generator": generator.name,
            "promptVersion": generator.prompt_version,
        }
        try:
            completion = generator.complete(shown, repair)
        except Exception as raised:  # a generator is foreign code: its crash fails the attempt
            exc = raised if isinstance(raised, GenerationFailed) else GenerationFailed(
                "error", f"{type(raised).__name__}: {raised}")  # fmt: skip
            attempts.append(_failed_attempt(base, exc))
            raise _Fallback(f"attempt {base['attempt']} failed: {exc.code}: {exc.detail}") from None
        if completion.finish_reason == "length":
            _cut(base, completion, len(shown.events), attempts)
        output, report = judge(completion.text, scope)
        attempts.append(_judged_attempt(base, completion, output, report))
        if report.passed:
            assert output is not None
            return output
        if number == MAX_ATTEMPTS:
            codes = ", ".join(sorted({f.code for f in report.failures}))
            raise _Fallback(f"rejected after {MAX_ATTEMPTS - 1} repair: {codes}")
        repair = Repair(completion.text, report.failures)
    raise AssertionError("unreachable")


def _cut(
    base: dict[str, Any], completion: Completion, events: int, attempts: list[Attempt]
) -> None:
    """An answer cut at the token limit is never judged nor repaired: split its chunk.

    A chunk of one event cannot be split: the generation falls back.
    """
    limit = completion.max_tokens
    detail = f"the answer reached the token limit ({limit}) and was cut"
    failure = GateFailure(TRUNCATED, str(base["generator"]), detail)
    record = {
        **_judged_attempt(base, completion, None, GateReport(False, (failure,))).record,
        "outcome": "failed",
        "detail": detail,
    }
    attempts.append(Attempt(record, None, GateReport(False, (failure,)), completion.model))
    if events <= 1:
        raise _Fallback(f"attempt {base['attempt']} failed: truncated: {detail}")
    raise _Truncated(events // 2)


def _judged_attempt(
    base: dict[str, Any], completion: Completion, output: Output | None, report: GateReport
) -> Attempt:
    record = {
        **base,
        "modelSnapshot": completion.model,
        "responseFormat": completion.response_format,
        "refusedFormats": list(completion.refused_formats),
        "contextTokens": completion.context_tokens,
        "maxTokens": completion.max_tokens,
        "usage": completion.usage.to_json(),
        "latencyMs": round(completion.latency_ms, 3),
        "httpCalls": completion.calls,
        "finishReason": completion.finish_reason,
        "outcome": "passed" if report.passed else "rejected",
        "failures": sorted({f.code for f in report.failures}),
    }
    return Attempt(record, output, report, completion.model, completion.text)


def _failed_attempt(base: dict[str, Any], exc: GenerationFailed) -> Attempt:
    record = {
        **base,
        "modelSnapshot": exc.model,
        "usage": {"promptTokens": 0, "completionTokens": 0, "totalTokens": 0},
        "latencyMs": round(exc.latency_ms, 3),
        "httpCalls": exc.calls,
        "outcome": "failed",
        "failures": [f"generation_{exc.code}"],
        "detail": exc.detail,
    }
    failure = GateFailure(f"generation_{exc.code}", str(base["generator"]), exc.detail)
    return Attempt(record, None, GateReport(False, (failure,)), exc.model)


def _fall_back(request: GenerationRequest, attempts: tuple[Attempt, ...], reason: str) -> Generated:
    """The built-in generator's output over the whole selection, with why it was needed."""
    builtin = _generate_once(DeterministicGenerator(), request)
    return replace(builtin, attempts=attempts, fallback=reason)


# ---------------------------------------------------------------------------
# artifacts


def artifacts(
    manifest: Manifest, generated: Generated, new_id: Callable[[], str]
) -> list[Artifact]:
    """Every attempt that was not published as its own artifact, then the one to publish.

    The last artifact's manifest lists every attempt (with the artifact each
    was kept as) and the fallback, if one was taken.
    """
    written: list[Artifact] = []
    records: list[dict[str, Any]] = []
    last_passing = _last_passing(generated)
    for index, attempt in enumerate(generated.attempts):
        record = dict(attempt.record)
        if attempt.passed:
            record["artifactId"] = manifest.artifact_id if index == last_passing else None
        else:
            artifact = _attempt_artifact(manifest, attempt, new_id())
            record["artifactId"] = artifact.id
            written.append(artifact)
        records.append(record)
    final = replace(
        manifest,
        prompt_version=generated.prompt_version,
        model_snapshot=generated.model_snapshot,
        attempts=tuple(records),
        fallback=generated.fallback,
    )
    reason = generated.reason
    if generated.fallback is not None and reason is None:
        reason = f"fallback to the built-in generator: {generated.fallback}"
    written.append(
        Artifact(
            final.artifact_id,
            final.subject,
            generated.status,
            final,
            generated.output,
            generated.report,
            reason,
        )
    )
    return written


def _last_passing(generated: Generated) -> int | None:
    """The attempt whose output is the one published (None after a fallback)."""
    if generated.fallback is not None or not generated.attempts:
        return None
    return len(generated.attempts) - 1


def _attempt_artifact(manifest: Manifest, attempt: Attempt, artifact_id: str) -> Artifact:
    record = dict(attempt.record)
    if attempt.response is not None:
        record["response"] = attempt.response  # the answer as the server sent it, for audit
    kept = replace(
        manifest,
        artifact_id=artifact_id,
        prompt_version=str(attempt.record["promptVersion"]),
        model_snapshot=attempt.model_snapshot,
        attempts=(record,),
    )
    codes = ", ".join(attempt.record["failures"])
    reason = f"attempt {attempt.record['attempt']} {attempt.record['outcome']}: {codes}"
    return Artifact(
        artifact_id, manifest.subject, attempt.status, kept, attempt.output, attempt.report, reason
    )


def summary_of_attempts(attempts: Sequence[Attempt]) -> dict[str, Any]:
    """Totals over attempts: tokens, latency, repairs (for reports and ``verify``)."""
    tokens = sum(int(a.record.get("usage", {}).get("totalTokens", 0)) for a in attempts)
    latency = sum(float(a.record.get("latencyMs", 0.0)) for a in attempts)
    repairs = sum(1 for a in attempts if a.record.get("repair"))
    return {"attempts": len(attempts), "repairs": repairs, "tokens": tokens, "latencyMs": latency}
