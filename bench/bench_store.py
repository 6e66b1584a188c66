"""Append throughput and recall latency on SQLite (the embedded default).

Baselines, measured in the same run:
- append: a bare ``sqlite3`` ``executemany`` of the same rows into the same
  ``events`` table, in the same batch transactions;
- recall: p50/p99 of ``Memory.recall`` over 10,000 subjects and 1,000,000 events
  (``--subjects``/``--per-subject`` scale it down for a quick look).

    python bench/bench_store.py [--subjects 10000 --per-subject 100]
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from common import median_seconds, percentile, report
from memlineage import Memory
from memlineage.ingest import parse_event, utc_now
from memlineage.store.rows import EVENT_COLUMNS, event_row

TEXTS = [
    "Never deploy {p} on Fridays; the budget is at most {n},500 EUR.",
    "I prefer tea over coffee in the {p} stand-up.",
    "Ticket {P}-{n} must be closed before 2026-12-{d:02d}.",
    "The agent may use read:billing but not write:billing for {p}.",
    "Daily run is {n} km; remind me at 07:{d:02d}.",
]


def make_events(subject: str, start: int, count: int) -> list[dict[str, object]]:
    out = []
    for i in range(start, start + count):
        project = f"proj{i % 7}"
        text = TEXTS[i % len(TEXTS)].format(p=project, P=project.upper(), n=i % 97, d=i % 28 + 1)
        out.append(
            {
                "id": f"{subject}:m{i}",
                "subject": subject,
                "text": text,
                "at": "2026-11-02T09:00:00Z",
                "project": project,
            }
        )
    return out


def bench_append(tmp: Path, total: int, batch: int, repeats: int) -> None:
    rows = make_events("user-bench", 0, total)
    batches = [rows[i : i + batch] for i in range(0, total, batch)]

    def ours() -> None:
        path = tmp / f"ours-{time.monotonic_ns()}.db"
        with Memory(str(path)) as memory:
            for chunk in batches:
                memory.add(chunk)

    now = utc_now()
    prepared = []  # the same rows Memory.add writes, hashed before the clock starts
    for seq, raw in enumerate(rows, start=1):
        event = parse_event(raw)
        prepared.append(event_row("default", event, seq, event.content_hash, now))
    row_batches = [prepared[i : i + batch] for i in range(0, total, batch)]
    insert = f"INSERT INTO events (tenant, {EVENT_COLUMNS}) VALUES ({', '.join('?' * 14)})"

    def bare() -> None:
        path = tmp / f"bare-{time.monotonic_ns()}.db"
        Memory(str(path)).close()  # same schema, same indexes
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        for chunk in row_batches:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(insert, chunk)
            conn.execute("COMMIT")
        conn.close()

    bare_s = median_seconds(bare, repeats)
    ours_s = median_seconds(ours, repeats)
    report("append: bare sqlite3 executemany", total / bare_s, "events/s")
    report(
        f"append: Memory.add (batches of {batch})",
        total / ours_s,
        "events/s",
        "bare sqlite3 executemany",
        bare_s / ours_s,
    )


def build_recall_store(path: Path, subjects: int, per_subject: int, consolidated: int) -> Memory:
    memory = Memory(str(path))
    started = time.perf_counter()
    for s in range(subjects):
        memory.add(make_events(f"user-{s}", 0, per_subject))
    built = time.perf_counter() - started
    report(f"build: {subjects * per_subject:,} events", subjects * per_subject / built, "events/s")
    for s in range(consolidated):
        memory.consolidate(f"user-{s}")
        memory.add(make_events(f"user-{s}", per_subject, 3))  # a raw tail
    return memory


def bench_recall(memory: Memory, subjects: int, consolidated: int, samples: int) -> None:
    rng = random.Random(7)
    for mode, pool in (("summary", range(consolidated)), ("raw", range(consolidated, subjects))):
        if not pool:
            continue
        latencies = []
        for _ in range(samples):
            subject = f"user-{rng.choice(pool)}"
            start = time.perf_counter()
            recalled = memory.recall(subject)
            latencies.append((time.perf_counter() - start) * 1000)
            assert recalled.mode == mode, (subject, recalled.reason)
        report(f"recall ({mode}) p50", percentile(latencies, 50), "ms")
        report(f"recall ({mode}) p99", percentile(latencies, 99), "ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subjects", type=int, default=10_000)
    parser.add_argument("--per-subject", type=int, default=100)
    parser.add_argument("--consolidated", type=int, default=500)
    parser.add_argument("--append-events", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--samples", type=int, default=5_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlineage-bench-") as tmp:
        bench_append(Path(tmp), args.append_events, args.batch, args.repeats)
        memory = build_recall_store(
            Path(tmp) / "recall.db", args.subjects, args.per_subject, args.consolidated
        )
        with memory:
            bench_recall(memory, args.subjects, args.consolidated, args.samples)


if __name__ == "__main__":
    main()
