"""Embeddings: the default embedder's throughput on one core, and what vectors cost to store.

1. Throughput of the built-in embedder (wordllama, 256 dimensions) over every
   LoCoMo dialogue turn, pinned to one CPU with the tokenizer's thread pool at
   one thread (goal: >= 5,000 events/s). The best of a few runs: the machine is
   shared, and a run that waited for the CPU measures the neighbours.
2. The embedding job end to end (read, embed, write, watermark) on SQLite and
   PostgreSQL, over the turns repeated to ``--events`` events, and the bytes the
   vectors take per event: the table and its primary-key index (SQLite:
   ``dbstat``; PostgreSQL: ``pg_total_relation_size``). Goal: < 600 bytes.

    python bench/bench_embed.py [--backend sqlite|postgres|both] [--events N] [--repeats N]
        [--embedder wordllama|minilm]

``--embedder minilm`` measures all-MiniLM-L6-v2 instead (numpy's BLAS at one
thread unless OMP_NUM_THREADS says otherwise; about 100 times slower: give it
``--repeats 1 --events 2000``).
"""

from __future__ import annotations

import os

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # before the tokenizer loads: one thread
os.environ.setdefault("OMP_NUM_THREADS", "1")  # before numpy loads: its BLAS on one thread

import argparse
import json
import sys
import time
from collections.abc import Sequence

from common import LOCOMO, open_memory, postgres_reachable, report
from memlineage import Memory
from memlineage.recall.embed import DEFAULT_KIND, make_embedder


def turns() -> list[str]:
    data = json.loads(LOCOMO.read_text("utf-8"))
    return [
        turn["text"]
        for conv in data
        for key, session in conv["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]


def pin_to_one_core() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def throughput(texts: Sequence[str], repeats: int, kind: str) -> tuple[float, float]:
    """Events per second of wall time and per second of the process's CPU time (the
    second does not count the time a busy machine kept the process waiting)."""
    embedder = make_embedder(kind)
    embedder.embed(["warm up: the model loads once per process"])
    wall = cpu = 0.0
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        embedder.embed(texts)
        wall = max(wall, len(texts) / (time.perf_counter() - start))
        cpu = max(cpu, len(texts) / (time.process_time() - start_cpu))
    return wall, cpu


def vector_bytes(memory: Memory) -> int:
    store = memory.store
    with store._read() as tx:  # type: ignore[attr-defined]
        if store.dialect == "sqlite":  # type: ignore[attr-defined]
            row = tx.one(
                "SELECT SUM(pgsize) FROM dbstat WHERE name IN"
                " ('event_vectors', 'sqlite_autoindex_event_vectors_1')"
            )
        else:
            row = tx.one("SELECT pg_total_relation_size('event_vectors')")
    return int(row[0] or 0)


def pgvector(memory: Memory) -> str:
    """Whether this PostgreSQL server could have pgvector (the store uses bytea either way)."""
    with memory.store._read() as tx:  # type: ignore[attr-defined]
        row = tx.one(
            "SELECT default_version, installed_version FROM pg_available_extensions"
            " WHERE name = 'vector'"
        )
    if row is None:
        return "not available on this server"
    return f"available ({row[0]}), installed: {row[1] or 'no'}"


def job(backend: str, texts: Sequence[str], events: int, kind: str) -> None:
    with open_memory(backend, "bench", embedder=kind) as memory:
        if backend == "postgres":
            print(f"postgres: pgvector extension {pgvector(memory)}; vectors are bytea")
        batch = []
        for n in range(events):
            batch.append(
                {"id": f"t-{n}", "subject": f"user-{n % 100}", "text": texts[n % len(texts)]}
            )
        memory.detect_after_add = False  # the bench measures the embedding job alone
        for start in range(0, events, 10_000):
            memory.add(batch[start : start + 10_000])
        memory.embedder.embed(["warm up"])
        start = time.perf_counter()
        runs = memory.embed()
        seconds = time.perf_counter() - start
        written = sum(r.embedded for r in runs)
        assert written == events, (written, events)
        report(f"{backend}: embedding job, {events:,} events", written / seconds, "events/s")
        report(f"{backend}: vector bytes per event", vector_bytes(memory) / events, "bytes")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--embedder", choices=("wordllama", "minilm"), default=DEFAULT_KIND)
    args = parser.parse_args()
    texts = turns()
    pin_to_one_core()
    wall, cpu = throughput(texts, args.repeats, args.embedder)
    report(f"{args.embedder} embed, {len(texts):,} LoCoMo turns, one core", wall, "events/s")
    report("  the same per second of CPU time", cpu, "events/s")
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    for backend in backends:
        if backend == "postgres" and not postgres_reachable():
            continue
        job(backend, texts, args.events, args.embedder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
