"""A consolidation in a process that never read its subject:
``.venv/bin/python bench/bench_cold_run.py [--size 20000] [--backend sqlite|postgres]``.

What another worker, a restarted one or ``memlineage consolidate`` on the command
line pays for +100 events on a published subject: every per-process cache emptied
(``clear_caches``), so the run reads the subject whole. Baselines of the same run: a
warm +100 (the worker that built the subject) and a full build of the same events in
a fresh store. Pint and VADER are loaded by a first build before anything is timed,
so no case pays a process's one-time loads. CPU time of this process (the
PostgreSQL server's work is not in it), medians of ``--runs`` of each.
"""

from __future__ import annotations

import argparse
import statistics
import time

from common import PG_URL, open_memory, report
from memlineage import Memory
from memlineage.meaning.extract import clear_caches
from synthetic import fill, quiet_tail

SUBJECT = "user-bench"


def cpu_of(memory: Memory) -> float:
    start = time.process_time()
    result = memory.consolidate(SUBJECT)
    assert result.switched, result.reason
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--postgres", default=PG_URL)
    args = parser.parse_args()
    size, backend = args.size, args.backend
    with open_memory(backend, pg=args.postgres) as memory:
        fill(memory, SUBJECT, size)
        cpu_of(memory)  # the first build: the one-time loads, and the items it stores
        cold: list[float] = []
        warm: list[float] = []
        added = size
        for _ in range(args.runs):
            memory.add(quiet_tail(SUBJECT, 100, start=added))
            clear_caches()
            cold.append(cpu_of(memory))
            memory.add(quiet_tail(SUBJECT, 100, start=added + 100))
            warm.append(cpu_of(memory))
            added += 200
    with open_memory(backend, pg=args.postgres) as fresh:
        fill(fresh, SUBJECT, size)
        clear_caches()
        full = cpu_of(fresh)
    name = f"{backend}: +100 on {size:,}"
    report(f"{name}, full build (CPU)", full * 1000, "ms")
    report(f"{name}, warm worker (CPU)", statistics.median(warm) * 1000, "ms",
           "the full build", statistics.median(warm) / full)  # fmt: skip
    report(f"{name}, cold process (CPU)", statistics.median(cold) * 1000, "ms",
           "the full build", statistics.median(cold) / full)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
