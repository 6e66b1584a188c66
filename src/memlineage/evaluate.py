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
- **token reduction**: 1 - rendered summary tokens / selected event tokens;
- **stale artifacts visible**: a check of the live store; any is blocking.

No average hides a blocking failure: the report names every subject and item.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import extract
from .model import Conflict, Event, FactValue, Output
from .render import render_summary
from .tokens import Tokenizer, default_tokenizer
from .values import Canonical, canonical

METRICS: tuple[str, ...] = (
    "key_fact_recall",
    "erroneous_new_fact_rate",
    "conflict_retention_rate",
    "token_reduction",
    "stale_visible",
)


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
) -> SubjectResult:
    """The metrics of one rebuilt output (``None``: the rebuild produced nothing usable)."""
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
    result.summary_tokens = tokenizer.count(render_summary(output.statements))
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
        same_key = {p for k, p in found if fact.key is None or k == fact.key}
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
        """Erroneous new facts and visible stale artifacts: each one fails the run."""
        wrong = [
            f for r in self.subjects for f in r.findings if f.metric == "erroneous_new_fact_rate"
        ]
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
