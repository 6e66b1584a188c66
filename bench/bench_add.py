"""``Memory.add`` against a bare ``executemany`` of the same rows, and detection throughput.

Workload: LoCoMo conversation turns (one event per turn, one subject per
conversation and speaker), appended in adds of ``--batch`` lines, each run into
a fresh database (SQLite file, PostgreSQL schema). Measured in the same run,
in ``--repeats`` rounds that interleave the variants (medians; a ratio is the
median of the rounds' ratios):

- bare ``executemany``: the driver writing the very rows ``Memory.add`` writes
  (hashed up front), in the same transactions;
- ``store.append``: the append transaction alone, events parsed up front;
- ``Memory.add``: JSON objects, validation and hashing included, with the
  default detection mode, and with ``detect_after_add=True`` (synchronous);
- detection: ``Memory.detect`` of every subject after the appends, in events
  per second of one core and CPU microseconds per event (process CPU time), the
  extraction libraries loaded and the extraction caches emptied first; the
  extraction alone (``keyed_items`` of the same events, what the job computes per
  event) in the same run; and what loading the libraries costs a new process.

    python bench/bench_add.py [--turns 5000] [--batch 500] [--repeats 3] [--no-pg]
    python bench/bench_add.py --detection-only   # the detection figures alone
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_store import PG_URL, Backend, PostgresBackend, SqliteBackend, bare_rows, split
from memlineage import Memory
from memlineage.meaning import extract
from memlineage.meaning.contradictions import keyed_items
from memlineage.model import Event
from memlineage.raw.ingest import parse_event

DEFAULT_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SHARED = Path(os.environ.get("MEMLINEAGE_SHARED_DATA", DEFAULT_SHARED))
LOCOMO = SHARED / "locomo" / "locomo10.json"


def locomo_turns(limit: int) -> list[dict[str, object]]:
    """The first ``limit`` conversation turns as event lines, in conversation order."""
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    lines: list[dict[str, object]] = []
    for conversation in data:
        talk = conversation["conversation"]
        sessions = sorted(
            (k for k in talk if k.startswith("session_") and not k.endswith("date_time")),
            key=lambda k: int(k.split("_")[1]),
        )
        for session in sessions:
            for turn in talk[session]:
                lines.append(
                    {
                        "id": f"{conversation['sample_id']}:{turn['dia_id']}",
                        "subject": f"{conversation['sample_id']}:{turn['speaker']}",
                        "text": str(turn["text"]),
                        "at": "2023-05-08T13:56:00Z",
                    }
                )
                if len(lines) == limit:
                    return lines
    return lines


def once(backend: Backend, run: Callable[[str], None]) -> float:
    with backend.fresh() as url:
        started = time.perf_counter()
        run(url)
        return time.perf_counter() - started


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def detection_cpu(backend: Backend, lines: list[dict[str, object]], batch: int) -> float:
    """CPU seconds of detecting every subject after a deferred import (libraries warm)."""
    with backend.fresh() as url, Memory(url, detect_after_add=False) as memory:
        for chunk in split(lines, batch):
            memory.add(chunk)
        memory.detect(str(lines[0]["subject"]))  # loads what extraction needs
        extract.clear_caches()  # what a worker pays for events it has not read before
        started = time.process_time()
        for subject in memory.subjects():
            memory.detect(subject)
        return time.process_time() - started


def extraction_cpu(lines: list[dict[str, object]]) -> float:
    """CPU seconds of the items detection compares, for the same events (caches empty)."""
    events = [Event.stored(parse_event(line), n, "") for n, line in enumerate(lines, 1)]
    keyed_items(events[0])  # loads what extraction needs
    extract.clear_caches()
    started = time.process_time()
    for event in events:
        keyed_items(event)
    return time.process_time() - started


def detection(backend: Backend, lines: list[dict[str, object]], batch: int, repeats: int) -> None:
    total = len(lines)
    cpu = statistics.median(detection_cpu(backend, lines, batch) for _ in range(repeats))
    print(
        f"{backend.name}: detection {total / cpu:,.0f} events/s per core"
        f" ({cpu / total * 1e6:,.0f} µs CPU per event, median of {repeats})"
    )


def cold_start() -> dict[str, float]:
    """What a new process pays before its first detection: import, then the first extract."""
    code = (
        "import time; t=time.perf_counter(); import memlineage.api; a=time.perf_counter();"
        "from memlineage.api import must_preserve;"
        "must_preserve([{'id':'x','subject':'s','text':'I weigh 70 kg and love it.'}]);"
        "b=time.perf_counter(); print(a-t, b-a)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = (float(x) for x in out.stdout.split())
    return {"import memlineage.api": first, "first extraction": second}


def bench(backend: Backend, lines: list[dict[str, object]], batch: int, repeats: int) -> None:
    total = len(lines)
    rows = split(bare_rows(lines), batch)
    events = [parse_event(r) for r in lines]

    def append(url: str) -> None:
        with Memory(url) as memory:
            for chunk in split(events, batch):
                memory.store.append("default", chunk)

    def add(**options: Any) -> Callable[[str], None]:
        def run(url: str) -> None:
            with Memory(url, **options) as memory:
                for chunk in split(lines, batch):
                    memory.add(chunk)

        return run

    runs: dict[str, Callable[[str], None]] = {
        "bare executemany": lambda url: backend.bare(url, "executemany", rows),
        "store.append": append,
        "Memory.add (default)": add(),
        "Memory.add (detect_after_add=True)": add(detect_after_add=True),
    }
    # Rounds interleave the variants, so that a shared machine's load, which drifts
    # over minutes, weighs on each alike; a ratio is the median of the rounds' ratios.
    seconds: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            seconds[name].append(once(backend, run))
    bare = seconds.pop("bare executemany")
    print(f"{backend.name}: bare executemany {total / median(bare):,.0f} events/s")
    for name, times in seconds.items():
        ratio = median([b / t for b, t in zip(bare, times, strict=True)])
        print(
            f"{backend.name}: {name} {total / median(times):,.0f} events/s,"
            f" {ratio:.3f}x bare executemany"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=5_000)
    parser.add_argument("--batch", type=int, default=500, help="lines per add")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pg", default=PG_URL)
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--no-detection", action="store_true", help="skip the detection figure")
    parser.add_argument("--detection-only", action="store_true", help="the detection figures alone")
    args = parser.parse_args()
    if not LOCOMO.exists():
        sys.exit(f"LoCoMo not found at {LOCOMO} (set MEMLINEAGE_SHARED_DATA)")
    lines = locomo_turns(args.turns)
    print(f"{len(lines):,} LoCoMo turns, adds of {args.batch}")
    if not args.detection_only:
        for what, seconds in cold_start().items():
            print(f"cold start: {what} {seconds:.2f} s")
    if not args.no_detection:
        cpu = statistics.median(extraction_cpu(lines) for _ in range(args.repeats))
        print(
            f"extraction alone (keyed_items): {len(lines) / cpu:,.0f} events/s per core"
            f" ({cpu / len(lines) * 1e6:,.0f} µs CPU per event, median of {args.repeats})"
        )
    backends: list[Backend] = [SqliteBackend()]
    if not args.no_pg:
        backends.append(PostgresBackend(args.pg))
    for backend in backends:
        if not args.detection_only:
            bench(backend, lines, args.batch, args.repeats)
        if not args.no_detection:
            detection(backend, lines, args.batch, args.repeats)


if __name__ == "__main__":
    main()
