"""Extraction scaling benchmark: ``.venv/bin/python bench/bench_extract.py [--quick]``.

Extracts the items of one event of 1, 10 and 100 KB for several shapes of text
and prints the median time of each, the ratios 10KB/1KB and 100KB/10KB (about
10 when extraction is linear in the text; about 100 when it is quadratic), and
the ratio to one regular-expression pass over the same text, measured in the
same run, as a baseline for the constant factor.

Times are process CPU time (``time.process_time``): the machine is shared, and
wall time mostly measures the neighbours. Smaller events are repeated more.
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from collections.abc import Callable

from memlineage.meaning.extract import clear_caches, event_items
from memlineage.model import Event

SIZES_KB = (1, 10, 100)
REPEATS = {1: 21, 10: 9, 100: 5}
QUICK_REPEATS = {1: 7, 10: 5, 100: 3}
PROSE = (
    "On Monday we agreed to cap the budget at $4,500 for ORION-12. ",
    "I never agreed to a $700 fee, and the limit is not 500. ",
    "The review is not on June 3, it's on June 4 at 14:30 UTC. ",
    "Revoke write:billing from svc@example.com but keep read:billing. ",
    "I detest olives; I love opera. The run was 5 km, not 5 mi. ",
    "Lunch was ¥600 and I lost 20 pounds; my pace is 5:30 per km. ",
)
SHAPES: dict[str, Callable[[int], str]] = {
    # the two reports of the hardening issue: numbers and amounts in one sentence
    "numbers ('Readings: 1 1 1 ...')": lambda size: ("Readings: " + "1 " * size)[:size],
    "amounts ('$1 $1 $1 ...')": lambda size: ("$1 " * size)[:size],
    "prose, many sentences": lambda size: ("".join(PROSE) * (size // 300 + 1))[:size],
    "prose, one sentence": lambda size: (
        ", ".join(p.rstrip(". ").replace(". ", ", ") for p in PROSE) * (size // 300 + 1)
    )[:size],
}
_WORDS = re.compile(r"\w+")


def median_cpu_seconds(
    fn: Callable[[], object], repeats: int, setup: Callable[[], object] = lambda: None
) -> float:
    times = []
    for _ in range(repeats):
        setup()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def event(text: str) -> Event:
    return Event(id="bench", subject="u", text=text, at="2026-03-04T23:00:00-07:00")


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    repeats = QUICK_REPEATS if quick else REPEATS
    counts = ", ".join(f"{kb} KB x{n}" for kb, n in repeats.items())
    print(f"python {sys.version.split()[0]}; one event, median CPU time of {counts}")
    event_items(event("I love opera."))  # builds the lexicon and the unit registry once
    for name, make in SHAPES.items():
        print(f"{name}")
        times: dict[int, float] = {}
        for kb in SIZES_KB:
            text = make(kb * 1000)
            items = len(event_items(event(text)))
            extract = lambda text=text: event_items(event(text))  # type: ignore[misc]  # noqa: E731
            scan = lambda text=text: _WORDS.findall(text)  # type: ignore[misc]  # noqa: E731
            # each run reads the text anew: the per-process caches would answer it
            times[kb] = median_cpu_seconds(extract, repeats[kb], setup=clear_caches)
            scan_time = median_cpu_seconds(scan, max(repeats[kb], 21))
            print(f"  {kb:>4} KB {times[kb] * 1000:10.1f} ms  {items:6,} items  "
                  f"ratio vs one regex word scan: {times[kb] / scan_time:7.1f}")  # fmt: skip
        print(f"  ratio 10KB/1KB   {times[10] / times[1]:6.1f}   (linear: ~10)")
        print(f"  ratio 100KB/10KB {times[100] / times[10]:6.1f}   (linear: ~10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
