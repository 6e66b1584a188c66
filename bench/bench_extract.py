"""Extraction scaling benchmark: ``.venv/bin/python bench/bench_extract.py [--quick]``.

Extracts the items of one event of 1, 10 and 100 KB for several shapes of text
and prints the median time of each, the ratios 10KB/1KB and 100KB/10KB (about
10 when extraction is linear in the text; about 100 when it is quadratic), and
the ratio to one regular-expression pass over the same text, measured in the
same run, as a baseline for the constant factor.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from common import median_seconds
from memlineage.extract import event_items
from memlineage.model import Event

SIZES_KB = (1, 10, 100)
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


def event(text: str) -> Event:
    return Event(id="bench", subject="u", text=text, at="2026-03-04T23:00:00-07:00")


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    repeats = 3 if quick else 5
    print(f"python {sys.version.split()[0]}; extraction of one event, median of {repeats}")
    event_items(event("I love opera."))  # builds the lexicon and the unit registry once
    for name, make in SHAPES.items():
        print(f"{name}")
        times: dict[int, float] = {}
        for kb in SIZES_KB:
            text = make(kb * 1000)
            items = len(event_items(event(text)))
            times[kb] = median_seconds(lambda text=text: event_items(event(text)), repeats)  # type: ignore[misc]
            scan = median_seconds(lambda text=text: _WORDS.findall(text), repeats)  # type: ignore[misc]
            print(f"  {kb:>4} KB {times[kb] * 1000:10.1f} ms  {items:6,} items  "
                  f"ratio vs one regex word scan: {times[kb] / scan:7.1f}")  # fmt: skip
        print(f"  ratio 10KB/1KB   {times[10] / times[1]:6.1f}   (linear: ~10)")
        print(f"  ratio 100KB/10KB {times[100] / times[10]:6.1f}   (linear: ~10)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
