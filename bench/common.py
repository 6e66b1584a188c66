"""Helpers shared by the benchmarks: timing with medians, and printing ratios."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """The median wall time of ``repeats`` runs of ``fn`` (the machine is noisy)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))
    return ordered[index]


def report(
    name: str, value: float, unit: str, baseline: str | None = None, ratio: float | None = None
) -> None:
    line = f"{name:<44} {value:>12,.2f} {unit}"
    if baseline is not None and ratio is not None:
        line += f"   ratio vs {baseline}: {ratio:.2f}"
    print(line, flush=True)
