"""``memlineage verify``: certify a generator before rollout.

It runs the generator over the fixed samples of the gate (:mod:`memlineage.consolidation.samples`)
and over three invariance checks per sample, each judged by the same parser
and gate a consolidation uses, with the same bounded repair:

* ``sample``: the sample as it is; its output must pass the gate, after at
  most one repair, without falling back to the built-in generator;
* ``unrelated_events``: the sample with unrelated events inserted before,
  between and after its own;
* ``regrouped``: the sample's events sent in two batches, the second an
  incremental run over the first one's output;
* ``retried``: the sample asked for twice more.

For each invariance check the must-preserve set (the key, canonical value and
polarity of every claim that carries a must-preserve item's key) and the
conflict set (``unresolvedConflicts`` and the conflict claims' keys) must equal
those of the ``sample`` run. A generator is certified when every row passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memlineage.consolidation import generation
from memlineage.consolidation.gate import CONFLICT_KIND
from memlineage.consolidation.generators.base import Generator
from memlineage.consolidation.render import render_summary
from memlineage.consolidation.samples import SAMPLES, Sample, ev
from memlineage.meaning.values import Canonical, canonical
from memlineage.model import Event, Output

CHECKS: tuple[str, ...] = ("sample", "unrelated_events", "regrouped", "retried")
#: events that carry no must-preserve item and belong to no sample's story
UNRELATED: tuple[str, ...] = (
    "The office plant on the third floor was watered.",
    "Lunch in the canteen was pasta.",
    "The team photo was taken in the courtyard.",
)

Projection = tuple[frozenset[tuple[str, Canonical, bool]], frozenset[str]]


@dataclass(frozen=True)
class Row:
    """One line of the table: a sample, a check, and how the generator did."""

    sample: str
    check: str
    passed: bool
    attempts: int = 0
    repairs: int = 0
    fallback: str | None = None
    tokens: int = 0
    latency_ms: float = 0.0
    problems: tuple[str, ...] = ()  # failure codes, or what changed against the sample run

    def progress(self) -> str:
        """One line for a person watching the rows come (a model takes seconds per row)."""
        verdict = "pass" if self.passed else "FAIL"
        return f"{self.sample} / {self.check}: {verdict} ({self.latency_ms:.0f} ms)"

    def to_json(self) -> dict[str, Any]:
        return {
            "sample": self.sample,
            "check": self.check,
            "passed": self.passed,
            "attempts": self.attempts,
            "repairs": self.repairs,
            "fallback": self.fallback,
            "tokens": self.tokens,
            "latencyMs": round(self.latency_ms, 3),
            "problems": list(self.problems),
        }


@dataclass(frozen=True)
class Certification:
    """Every row, and the verdict: certified only when all of them pass."""

    generator: dict[str, Any]
    rows: tuple[Row, ...] = field(default_factory=tuple)

    @property
    def passed(self) -> bool:
        return bool(self.rows) and all(r.passed for r in self.rows)

    @property
    def pass_rate(self) -> float:
        return sum(r.passed for r in self.rows) / len(self.rows) if self.rows else 0.0

    @property
    def failed_samples(self) -> list[str]:
        return list(dict.fromkeys(r.sample for r in self.rows if not r.passed))

    def totals(self) -> dict[str, Any]:
        return {
            "rows": len(self.rows),
            "passed": sum(r.passed for r in self.rows),
            "passRate": round(self.pass_rate, 4),
            "repairs": sum(r.repairs for r in self.rows),
            "fallbacks": sum(r.fallback is not None for r in self.rows),
            "tokens": sum(r.tokens for r in self.rows),
            "latencyMs": round(sum(r.latency_ms for r in self.rows), 3),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "certified": self.passed,
            "generator": self.generator,
            "failedSamples": self.failed_samples,
            "totals": self.totals(),
            "rows": [r.to_json() for r in self.rows],
        }

    def table(self) -> str:
        """The same content as :meth:`to_json`, as a table for a person."""
        header = (
            f"{'sample':<27} {'check':<17} {'result':<6} {'repairs':>7} {'fallback':>8} "
            f"{'tokens':>8} {'latency ms':>10}  problems"
        )
        lines = [header, "-" * len(header)]
        for r in self.rows:
            lines.append(
                f"{r.sample:<27} {r.check:<17} {'pass' if r.passed else 'FAIL':<6} "
                f"{r.repairs:>7} {'yes' if r.fallback else '-':>8} {r.tokens:>8} "
                f"{r.latency_ms:>10.1f}  {', '.join(r.problems)}"
            )
        t = self.totals()
        lines.append(
            f"pass rate {t['passed']}/{t['rows']} ({t['passRate']:.0%}), repairs {t['repairs']}, "
            f"fallbacks {t['fallbacks']}, tokens {t['tokens']}, latency {t['latencyMs']:.0f} ms"
        )
        name = self.generator.get("model") or self.generator.get("name")
        if self.passed:
            lines.append(f"certified: memlineage will publish the summaries of {name}")
        else:
            lines.append(f"NOT certified: failed on {', '.join(self.failed_samples)}")
        return "\n".join(lines)


def verify(
    generator: Generator,
    samples: Sequence[Sample] = SAMPLES,
    *,
    progress: Callable[[Row], None] | None = None,
) -> Certification:
    """Run every sample and invariance check; one row each."""
    rows: list[Row] = []
    for sample in samples:
        for row in _sample_rows(generator, sample):
            rows.append(row)
            if progress is not None:
                progress(row)
    described = {
        "name": getattr(generator, "name", type(generator).__name__),
        "promptVersion": getattr(generator, "prompt_version", None),
        "modelSnapshot": getattr(generator, "model_snapshot", None),
    }
    config = getattr(generator, "config", None)
    if config is not None and hasattr(config, "to_json"):
        described.update({k: v for k, v in config.to_json().items() if k in ("model", "baseUrl")})
    return Certification(described, tuple(rows))


def _sample_rows(generator: Generator, sample: Sample) -> Iterator[Row]:
    """Each row as soon as its generations are done (a model takes seconds per row)."""
    base = generation.generate(generator, sample.request())
    expected = _projection(base.output, sample)
    yield _row(sample, "sample", base)
    variant = with_unrelated_events(sample)
    yield _row(sample, "unrelated_events", generation.generate(
        generator, variant.request()), expected)  # fmt: skip
    half = max(1, (len(sample.events) + 1) // 2)
    yield _row(sample, "regrouped", generation.generate(
        generator, sample.request(), max_events_per_chunk=half), expected)  # fmt: skip
    retries = [generation.generate(generator, sample.request()) for _ in range(2)]
    yield _merged(sample, "retried", [_row(sample, "retried", r, expected) for r in retries])


def with_unrelated_events(sample: Sample) -> Sample:
    """The sample with an unrelated event before, between and after its own events."""
    unrelated = [ev(f"unrelated-{i + 1}", text) for i, text in enumerate(UNRELATED)]
    events: list[Event] = [unrelated[0]]
    middle = len(sample.events) // 2
    for index, event in enumerate(sample.events):
        if index == middle:
            events.append(unrelated[1])
        events.append(event)
    events.append(unrelated[2])
    return replace(sample, events=tuple(events))


def _row(
    sample: Sample,
    check: str,
    generated: generation.Generated,
    expected: Projection | None = None,
) -> Row:
    totals = generation.summary_of_attempts(generated.attempts)
    problems: list[str] = []
    if generated.fallback is not None:
        codes = {c for a in generated.attempts for c in a.record.get("failures", ())}
        problems += sorted(codes) or [generated.fallback]
    elif not generated.report.passed:
        problems += sorted({f.code for f in generated.report.failures})
    if not problems:
        problems += _unsaid(generated.output, sample)
    if expected is not None and not problems:
        problems += _differences(expected, _projection(generated.output, sample))
    return Row(
        sample.name,
        check,
        passed=not problems,
        attempts=totals["attempts"],
        repairs=totals["repairs"],
        fallback=generated.fallback,
        tokens=totals["tokens"],
        latency_ms=totals["latencyMs"],
        problems=tuple(problems),
    )


def _merged(sample: Sample, check: str, rows: list[Row]) -> Row:
    return Row(
        sample.name,
        check,
        passed=all(r.passed for r in rows),
        attempts=sum(r.attempts for r in rows),
        repairs=sum(r.repairs for r in rows),
        fallback=next((r.fallback for r in rows if r.fallback), None),
        tokens=sum(r.tokens for r in rows),
        latency_ms=sum(r.latency_ms for r in rows),
        problems=tuple(dict.fromkeys(p for r in rows for p in r.problems)),
    )


def _unsaid(output: Output | None, sample: Sample) -> list[str]:
    """The sample's hand-written phrases the rendered summary fails to show (their event
    not cold): what a reader sees is judged, not only the claims."""
    if output is None or not sample.must_say:
        return []
    shown = render_summary(output.statements)
    cold = set(output.cold)
    return [
        f"the summary does not say {phrase!r}"
        for event_id, phrase in sample.must_say
        if phrase not in shown and event_id not in cold
    ]


def _projection(output: Output | None, sample: Sample) -> Projection:
    """The must-preserve set and the conflict set of an output."""
    if output is None:
        return frozenset(), frozenset()
    keys = {item.key for item in sample.items()}
    preserved = frozenset(
        (c.key, canonical(c.value, c.unit), c.polarity) for c in output.claims if c.key in keys
    )
    conflicts = frozenset(output.unresolved_conflicts) | frozenset(
        f"claim:{c.key}" for c in output.claims if c.kind == CONFLICT_KIND
    )
    return preserved, conflicts


def _differences(expected: Projection, found: Projection) -> list[str]:
    problems = []
    if expected[0] != found[0]:
        lost = sorted(k for k, _, _ in expected[0] - found[0])
        gained = sorted(k for k, _, _ in found[0] - expected[0])
        problems.append(f"must-preserve set changed (lost {lost}, gained {gained})")
    if expected[1] != found[1]:
        problems.append(f"conflict set changed ({sorted(expected[1])} -> {sorted(found[1])})")
    return problems
