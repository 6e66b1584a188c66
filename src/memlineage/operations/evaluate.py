"""Evaluation (DESIGN "Evaluation"): rebuild sample summaries and measure five metrics.

The metrics are computed here, purely, from a rebuilt output and the raw
events it cites, against gold that is *not* the extractor's own output:

- **key-fact recall**: gold facts carried by a claim derived from their event.
  Gold comes from events' explicit ``facts``, a gold file, and dataset
  adapters (LoCoMo: every evidence event must be cited, hot or cold);
- **erroneous-new-fact rate**: claims and statement values that the cited raw
  events do not contain, or a polarity opposite to the gold; any is blocking;
- **conflict retention rate**: unresolved conflicts that the output keeps,
  with both sides cited by statements marked contested;
- **token reduction**: 1 - tokens of the summary as an agent reads it (rendered,
  its over-budget line included) / selected event tokens; a negative reduction
  on a subject of more than :data:`REDUCTION_BLOCKS_FROM` events is a failure
  of the budget, and blocking;
- **stale artifacts visible**: a check of the live store; any is blocking.

No average hides a blocking failure: the report names every subject and item.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memlineage.consolidation.alias import why_not_summary
from memlineage.consolidation.consolidate import DEFAULT_BUDGET, build
from memlineage.consolidation.generators.base import Generator
from memlineage.consolidation.render import render_summary
from memlineage.errors import BadInput, NotFound
from memlineage.meaning import extract
from memlineage.meaning.values import Canonical, canonical
from memlineage.model import ArtifactStatus, Conflict, Event, FactValue, Output
from memlineage.progress import Progress, begin
from memlineage.raw.ingest import utc_now
from memlineage.raw.validity import source_state
from memlineage.store.protocol import Store
from memlineage.strings import text_problem
from memlineage.tokens import Tokenizer, default_tokenizer

METRICS: tuple[str, ...] = (
    "key_fact_recall",
    "erroneous_new_fact_rate",
    "conflict_retention_rate",
    "token_reduction",
    "stale_visible",
)


#: a subject of more than this many events whose summary is larger than its events fails
#: the run: with so many events, a budget that holds should always compress
REDUCTION_BLOCKS_FROM = 50


@dataclass(frozen=True)
class GoldFact:
    """A fact an output must carry: from ``event``, with ``value`` (and ``key`` when known)."""

    event: str
    value: FactValue
    unit: str | None = None
    polarity: bool = True
    key: str | None = None
    origin: str = "facts"  # facts, gold file, or a dataset adapter's name

    def to_json(self) -> dict[str, Any]:
        return {
            "event": self.event,
            "key": self.key,
            "value": self.value,
            "unit": self.unit,
            "polarity": self.polarity,
            "origin": self.origin,
        }


@dataclass(frozen=True)
class Finding:
    """One thing that lowered a metric or blocks the run, named so a person can find it."""

    subject: str
    metric: str
    item: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {
            "subject": self.subject,
            "metric": self.metric,
            "item": self.item,
            "detail": self.detail,
        }


@dataclass
class SubjectResult:
    """The counts behind one subject's metrics."""

    subject: str
    gold: int = 0
    gold_carried: int = 0
    values_checked: int = 0
    erroneous: int = 0
    conflicts: int = 0
    conflicts_kept: int = 0
    source_tokens: int = 0
    summary_tokens: int = 0
    evidence: int = 0
    evidence_cited: int = 0
    findings: list[Finding] = field(default_factory=list)
    rebuilt: bool = True
    gate_passed: bool = True
    error: str | None = None

    def metrics(self) -> dict[str, float | None]:
        return {
            "key_fact_recall": _rate(
                self.gold_carried + self.evidence_cited, self.gold + self.evidence
            ),
            "erroneous_new_fact_rate": _rate(self.erroneous, self.values_checked, empty=0.0),
            "conflict_retention_rate": _rate(self.conflicts_kept, self.conflicts),
            "token_reduction": (
                1 - self.summary_tokens / self.source_tokens if self.source_tokens else None
            ),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "metrics": self.metrics(),
            "counts": {
                "gold": self.gold,
                "gold_carried": self.gold_carried,
                "values_checked": self.values_checked,
                "erroneous": self.erroneous,
                "conflicts": self.conflicts,
                "conflicts_kept": self.conflicts_kept,
                "source_tokens": self.source_tokens,
                "summary_tokens": self.summary_tokens,
                "evidence": self.evidence,
                "evidence_cited": self.evidence_cited,
            },
            "gate_passed": self.gate_passed,
            "error": self.error,
            "findings": [f.to_json() for f in self.findings],
        }


def _rate(part: int, whole: int, empty: float | None = None) -> float | None:
    return part / whole if whole else empty


def gold_from_facts(events: Iterable[Event]) -> list[GoldFact]:
    """Events' explicit facts: given by the client, so independent of the extractor."""
    return [GoldFact(e.id, f.value, f.unit, f.polarity, key=f.key) for e in events for f in e.facts]


def score_subject(
    subject: str,
    events: Sequence[Event],
    conflicts: Sequence[Conflict],
    output: Output | None,
    gold: Sequence[GoldFact] = (),
    evidence: Iterable[str] = (),
    tokenizer: Tokenizer | None = None,
    *,
    budget: int | None = None,
    over_budget: bool = False,
) -> SubjectResult:
    """The metrics of one rebuilt output (``None``: the rebuild produced nothing usable).

    ``budget`` and ``over_budget`` are its manifest's: the rendered summary says so.
    """
    result = SubjectResult(subject)
    if output is None:
        result.rebuilt = False
        return result
    tokenizer = tokenizer or default_tokenizer()
    by_id = {e.id: e for e in events}
    _score_gold(result, output, gold)
    _score_values(result, output, by_id)
    _score_conflicts(result, output, conflicts)
    _score_evidence(result, output, evidence, by_id)
    result.source_tokens = sum(tokenizer.count(e.text) for e in events)
    read = render_summary(output.statements, budget=budget, over_budget=over_budget)
    result.summary_tokens = tokenizer.count(read)
    reduction = result.metrics()["token_reduction"]
    if len(events) > REDUCTION_BLOCKS_FROM and reduction is not None and reduction < 0:
        detail = (
            f"the summary ({result.summary_tokens} tokens) is larger than its {len(events)}"
            f" events ({result.source_tokens} tokens): the budget did not hold"
        )
        result.findings.append(Finding(subject, "token_reduction", subject, detail))
    return result


def _score_gold(result: SubjectResult, output: Output, gold: Sequence[GoldFact]) -> None:
    carried: dict[tuple[str, Canonical], set[tuple[str, bool]]] = {}
    for claim in output.claims:
        canon = canonical(claim.value, claim.unit)
        for source in claim.derived_from:
            carried.setdefault((source, canon), set()).add((claim.key, claim.polarity))
    for fact in gold:
        result.gold += 1
        found = carried.get((fact.event, canonical(fact.value, fact.unit)), set())
        same_key = {p for k, p in found if _same_key(k, fact.key)}
        if fact.polarity in same_key:
            result.gold_carried += 1
        elif same_key:
            result.erroneous += 1
            result.findings.append(
                Finding(
                    result.subject,
                    "erroneous_new_fact_rate",
                    fact.event,
                    f"polarity opposite to the gold for {fact.value!r}",
                )
            )
        else:
            result.findings.append(
                Finding(
                    result.subject,
                    "key_fact_recall",
                    fact.event,
                    f"no claim carries {fact.value!r}" + (f" ({fact.key})" if fact.key else ""),
                )
            )


def _same_key(claim_key: str, gold_key: str | None) -> bool:
    """A gold key matches a claim key exactly or as its last segments (claims scope their
    keys by project, e.g. ``global/fact/budget`` carries the gold key ``budget``)."""
    return gold_key is None or claim_key == gold_key or claim_key.endswith("/" + gold_key)


def _supported_values(events: Iterable[Event]) -> set[Canonical]:
    """Every value the raw events themselves state: their facts and the values in their text."""
    found: set[Canonical] = set()
    for event in events:
        found.update(canonical(f.value, f.unit) for f in event.facts)
        found.update(canonical(i.value, i.unit) for i in extract.event_items(event))
        found.update(canonical(v, u) for v, u, _ in extract.text_values(event.text))
    return found


def _score_values(result: SubjectResult, output: Output, by_id: Mapping[str, Event]) -> None:
    """A claim's value or a statement's number/date that its cited events do not contain."""
    support: dict[tuple[str, ...], set[Canonical]] = {}

    def supported(sources: tuple[str, ...]) -> set[Canonical]:
        if sources not in support:
            support[sources] = _supported_values(by_id[s] for s in sources if s in by_id)
        return support[sources]

    for claim in output.claims:
        if claim.kind == "conflict":
            continue  # a conflict claim names a conflict, not a value of the events
        result.values_checked += 1
        if canonical(claim.value, claim.unit) not in supported(tuple(sorted(claim.derived_from))):
            result.erroneous += 1
            result.findings.append(
                Finding(
                    result.subject,
                    "erroneous_new_fact_rate",
                    f"claim {claim.key}",
                    f"{claim.value!r} is not in its cited events {list(claim.derived_from)}",
                )
            )
    for index, statement in enumerate(output.statements):
        sources = tuple(sorted(statement.derived_from))
        for value, unit, surface in extract.text_values(statement.text):
            result.values_checked += 1
            if canonical(value, unit) not in supported(sources):
                result.erroneous += 1
                result.findings.append(
                    Finding(
                        result.subject,
                        "erroneous_new_fact_rate",
                        f"statement {index}",
                        f"{surface!r} is not in its cited events {list(sources)}",
                    )
                )


def _score_conflicts(result: SubjectResult, output: Output, conflicts: Sequence[Conflict]) -> None:
    kept = set(output.unresolved_conflicts)
    contested: dict[str, set[str]] = {}
    for statement in output.statements:
        if statement.contested:
            contested.setdefault(statement.contested, set()).update(statement.derived_from)
    for conflict in conflicts:
        if conflict.resolved:
            continue
        result.conflicts += 1
        sides = contested.get(conflict.id, set())
        if conflict.id in kept and {conflict.a, conflict.b} <= sides:
            result.conflicts_kept += 1
        else:
            result.findings.append(
                Finding(
                    result.subject,
                    "conflict_retention_rate",
                    conflict.id,
                    "not kept with both sides contested",
                )
            )


def _score_evidence(
    result: SubjectResult, output: Output, evidence: Iterable[str], by_id: Mapping[str, Event]
) -> None:
    cited = set(output.cold)
    for claim in output.claims:
        cited.update(claim.derived_from)
    for statement in output.statements:
        cited.update(statement.derived_from)
    for event_id in evidence:
        if event_id not in by_id:
            continue  # evidence that is no longer valid is not owed
        result.evidence += 1
        if event_id in cited:
            result.evidence_cited += 1
        else:
            result.findings.append(
                Finding(result.subject, "key_fact_recall", event_id, "evidence event not cited")
            )


_BLOCKING_METRICS = frozenset({"erroneous_new_fact_rate", "token_reduction"})


@dataclass
class EvalReport:
    """Per-subject results, the overall metrics, and what blocks the run."""

    subjects: list[SubjectResult]
    stale_visible: list[Finding]
    config: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    run_id: str | None = None

    def overall(self) -> dict[str, float | None]:
        total = SubjectResult("*")
        for r in self.subjects:
            for name in (
                "gold",
                "gold_carried",
                "values_checked",
                "erroneous",
                "conflicts",
                "conflicts_kept",
                "evidence",
                "evidence_cited",
            ):
                setattr(total, name, getattr(total, name) + getattr(r, name))
        reductions = [m for r in self.subjects if (m := r.metrics()["token_reduction"]) is not None]
        metrics = total.metrics()
        metrics["token_reduction"] = sum(reductions) / len(reductions) if reductions else None
        metrics["stale_visible"] = float(len(self.stale_visible))
        return metrics

    @property
    def blocking(self) -> list[Finding]:
        """Erroneous new facts, a summary larger than its many events (the budget failed)
        and visible stale artifacts: each one fails the run."""
        wrong = [f for r in self.subjects for f in r.findings if f.metric in _BLOCKING_METRICS]
        return wrong + self.stale_visible

    @property
    def passed(self) -> bool:
        return not self.blocking

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "passed": self.passed,
            "metrics": self.overall(),
            "blocking": [f.to_json() for f in self.blocking],
            "subjects": [r.to_json() for r in self.subjects],
            "config": self.config,
            "timings": self.timings,
        }


# ---------------------------------------------------------------------------
# the run: rebuild without switching, check the live store, store the run


def parse_gold(lines: Sequence[str]) -> list[GoldFact]:
    """A gold file: JSONL of ``{event, key?, value, unit?, polarity?}``; BadInput names the line."""
    facts: list[GoldFact] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise BadInput(f"not valid JSON: {exc}", line=number) from exc
        facts.append(gold_fact(row, number))
    return facts


def gold_facts(rows: Sequence[Any]) -> list[GoldFact]:
    """Gold facts given as objects (the HTTP service's ``gold``); BadInput names the 1-based
    position as the line, as a gold file's line would be."""
    return [gold_fact(row, number) for number, row in enumerate(rows, start=1)]


def gold_fact(row: Any, number: int) -> GoldFact:
    """One ``{event, key?, value, unit?, polarity?}`` object, ``number`` naming it in errors."""
    if not isinstance(row, dict):
        raise BadInput("a gold fact must be a JSON object", line=number)
    unknown = set(row) - {"event", "key", "value", "unit", "polarity"}
    if unknown:
        raise BadInput("unknown field", line=number, field=sorted(unknown)[0])
    for name, item in row.items():
        if isinstance(item, str) and (problem := text_problem(item)) is not None:
            raise BadInput(problem, line=number, field=name)
    event, value = row.get("event"), row.get("value")
    if not isinstance(event, str) or not event:
        raise BadInput("must be an event id", line=number, field="event")
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise BadInput("must be a string or a number", line=number, field="value")
    for name in ("key", "unit"):
        if row.get(name) is not None and not isinstance(row[name], str):
            raise BadInput("must be a string", line=number, field=name)
    polarity = row.get("polarity", True)
    if not isinstance(polarity, bool):
        raise BadInput("must be true or false", line=number, field="polarity")
    return GoldFact(event, value, row.get("unit"), polarity, row.get("key"), "gold file")


def visible_stale(store: Store, tenant: str, subjects: Iterable[str]) -> list[Finding]:
    """Subjects whose recall would serve a summary that is not fresh and valid right now."""
    found: list[Finding] = []
    with store.reader(tenant) as reader:
        for subject in subjects:
            head = reader.head(subject)
            if head is None or why_not_summary(head) is not None or head.artifact is None:
                continue  # recall goes raw: nothing derived is visible
            artifact = head.artifact
            inputs = artifact.manifest.input_ids
            events = reader.events_by_id(subject, inputs)
            state = source_state(events, reader.operations(subject), store.policy)
            invalid = [i for i in inputs if i in state.invalid or i not in {e.id for e in events}]
            if artifact.status is not ArtifactStatus.PUBLISHED or invalid:
                found.append(
                    Finding(
                        subject,
                        "stale_visible",
                        artifact.id,
                        f"recall serves it with status {artifact.status}"
                        + (f" and invalid inputs {invalid}" if invalid else ""),
                    )
                )
    return found


def run_eval(
    store: Store,
    tenant: str,
    subjects: Sequence[str] | None = None,
    *,
    sample: int | None = None,
    gold: Sequence[GoldFact] = (),
    evidence: Mapping[str, Sequence[str]] | None = None,
    generator: Generator | None = None,
    budget: int | None = DEFAULT_BUDGET,
    progress: Progress | None = None,
    save: bool = True,
) -> EvalReport:
    """Rebuild summaries of ``subjects`` (all, or ``sample`` of them) from the raw layer.

    Never writes an artifact or moves an alias. ``evidence`` maps a subject to
    event ids its output must cite (hot or cold). The run is stored unless
    ``save`` is false. ``progress`` hears ``rebuilding`` in subjects.
    """
    started, clock = utc_now(), time.perf_counter()
    with store.reader(tenant) as reader:
        every = reader.subjects()
    chosen = list(subjects) if subjects else every
    unknown = sorted(set(chosen) - set(every))
    if unknown:
        raise NotFound(f"no subject {unknown[0]!r} in tenant {tenant!r}", field="subject")
    if sample is not None and sample < len(chosen):
        chosen = sorted(chosen)[:: max(1, len(chosen) // sample)][:sample]
    gold_by_subject = _gold_by_subject(store, tenant, gold)
    results: list[SubjectResult] = []
    rebuild_seconds = 0.0
    advance = begin(progress, "rebuilding", len(chosen))
    for subject in chosen:
        start = time.perf_counter()
        built = build(store, tenant, subject, generator, budget=budget, incremental=False)
        rebuild_seconds += time.perf_counter() - start
        events = built.selection.events
        owed = [*gold_from_facts(events), *gold_by_subject.get(subject, [])]
        result = score_subject(
            subject,
            events,
            built.selection.conflicts,
            built.artifact.output,  # scored even when the gate refused it: a regression shows
            owed,
            (evidence or {}).get(subject, ()),
            budget=built.artifact.manifest.budget,
            over_budget=built.artifact.manifest.over_budget,
        )
        result.gate_passed = built.artifact.gate.passed
        if not result.rebuilt:
            result.error = built.artifact.reason or "rebuild failed"
            result.findings.append(Finding(subject, "rebuild", built.artifact.id, result.error))
        results.append(result)
        if advance is not None:
            advance(1)
    report = EvalReport(
        results,
        visible_stale(store, tenant, every),
        config={
            "tenant": tenant,
            "subjects": len(chosen),
            "generator": (generator.name if generator else "deterministic"),
            "budget": budget,
            "gold_facts": len(gold),
        },
    )
    report.timings = {
        "seconds": time.perf_counter() - clock,
        "rebuild_seconds": rebuild_seconds,
        "per_subject_ms": 1000 * rebuild_seconds / len(chosen) if chosen else 0.0,
    }
    if save:
        report.run_id = f"eval-{started}-{uuid.uuid4().hex[:6]}"
        store.insert_eval_run(
            tenant, report.run_id, started, utc_now(), report.passed, report.to_json()
        )
    return report


def _gold_by_subject(
    store: Store, tenant: str, gold: Sequence[GoldFact]
) -> dict[str, list[GoldFact]]:
    """Each gold fact under the subject of its event; a fact naming no event is bad input."""
    by_subject: dict[str, list[GoldFact]] = {}
    if not gold:
        return by_subject
    with store.reader(tenant) as reader:
        subjects = reader.subjects_of_events([g.event for g in gold])
    for fact in gold:
        if fact.event not in subjects:
            raise NotFound(f"gold fact names no event {fact.event!r}", field="event")
        by_subject.setdefault(subjects[fact.event], []).append(fact)
    return by_subject
