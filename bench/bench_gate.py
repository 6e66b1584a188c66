"""Gate and extraction benchmark: ``.venv/bin/python bench/bench_gate.py``.

* gate: 10,000 must-preserve items against an output of 10,000 claims, reported
  against the time to merely parse the same output (from its JSON text, and
  from plain values) in the same run; medians over several repeats;
* extraction: events per second over LoCoMo observations (``../shared/data``,
  read in place, never copied) and over a synthetic batch dense in items.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any

from common import LOCOMO, median_seconds
from memlineage.consolidation.gate import check
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.parse import parse_output
from memlineage.meaning.extract import expected_open_items, extract_items
from memlineage.meaning.values import canonical
from memlineage.model import Event
from memlineage.operations import locomo

REPEATS = 7
TEMPLATES = (
    "Ticket ORION-{i} must be closed by 2024-{m:02d}-{d:02d}.",
    "The run for leg {i} was {i}.5 km and cost ${i},250.",
    "Grant read:billing{i} to svc{i}@example.com but never write:repo{i}.",
    "Never deploy build {i} on Fridays; latency stays under {i} ms.",
)


def synthetic_events(count: int) -> tuple[Event, ...]:
    events = []
    for i in range(count):
        text = TEMPLATES[i % len(TEMPLATES)].format(i=i + 1, m=i % 12 + 1, d=i % 28 + 1)
        project = ("orion", "vega", None)[i % 3]
        events.append(Event(id=f"m-{i}", subject="u", text=text, at="2024-03-01T10:00:00Z",
                            project=project))  # fmt: skip
    return tuple(events)


def median_ms(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    return median_seconds(fn, repeats) * 1000


def bench_gate(target_items: int = 10_000) -> None:
    events: tuple[Event, ...] = ()
    items = []
    count = target_items // 3
    while len(items) < target_items:
        events = synthetic_events(count)
        items = extract_items(events)
        count += max(1, (target_items - len(items)) // 3)
    # whole events only: a statement names every value of its sentence
    partial = {i.source for i in items[target_items:]}
    items = [i for i in items[:target_items] if i.source not in partial]
    sources = {i.source for i in items}
    events = tuple(e for e in events if e.id in sources)
    open_items = expected_open_items(events)
    request = GenerationRequest("u", events, tuple(items), (), open_items)
    raw = DeterministicGenerator().generate(request)
    text = json.dumps(raw)
    output = parse_output(raw)
    report = check(items, (), open_items, output, events)
    assert report.passed, report.failures[:3]
    parse_text = median_ms(lambda: parse_output(text))
    parse_values = median_ms(lambda: parse_output(raw))
    gate = median_ms(lambda: check(items, (), open_items, output, events))

    def cold() -> None:
        canonical.cache_clear()
        check(items, (), open_items, output, events)

    gate_cold = median_ms(cold)
    # the statement checks' share: the same output without statements (its report fails)
    no_statements = dataclasses.replace(output, statements=())
    gate_claims = median_ms(lambda: check(items, (), open_items, no_statements, events))
    print(f"gate: {len(items):,} items, {len(output.claims):,} claims, {len(events):,} events, "
          f"{len(output.statements):,} statements, median of {REPEATS}")  # fmt: skip
    print(f"  parse (JSON text)          {parse_text:9.1f} ms")
    print(f"  parse (plain values)       {parse_values:9.1f} ms")
    print(f"  gate                       {gate:9.1f} ms")
    print(f"  gate, cold value cache     {gate_cold:9.1f} ms")
    print(f"  gate without statements    {gate_claims:9.1f} ms")
    print(f"  ratio gate / parse(text)   {gate / parse_text:9.2f}")
    print(f"  ratio gate / parse(values) {gate / parse_values:9.2f}")
    print(f"  ratio cold gate / parse(text) {gate_cold / parse_text:6.2f}")


def locomo_events() -> tuple[Event, ...]:
    """The LoCoMo observations, one event each (none when the data is not at hand)."""
    if not LOCOMO.exists():
        return ()
    return tuple(
        Event(id=o.id, subject=o.subject, text=o.text, at=o.at or "2023-05-08T13:56:00Z")
        for conversation in locomo.load(LOCOMO)
        for o in conversation.observations
    )


def bench_extraction() -> None:
    for name, events in (("LoCoMo observations", locomo_events()),
                         ("synthetic, item-dense", synthetic_events(5_000))):  # fmt: skip
        if not events:
            print(f"extraction: {name}: data not found, skipped")
            continue
        items = extract_items(events)
        ms = median_ms(lambda events=events: extract_items(events), repeats=3)  # type: ignore[misc]
        sentences = sum(max(1, e.text.count(". ") + 1) for e in events)
        print(f"extraction: {name}: {len(events):,} events, {len(items):,} items, "
              f"{len(events) / ms * 1000:,.0f} events/s, ~{sentences / ms * 1000:,.0f} "
              f"sentences/s (median of 3)")  # fmt: skip


def main() -> int:
    print(f"python {sys.version.split()[0]}")
    bench_gate()
    bench_extraction()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
