"""Recall latency with a query and a budget, on SQLite and PostgreSQL.

A store of ``--subjects`` subjects x ``--per-subject`` events (default 10,000 x
100 = 1,000,000), whose sentences are drawn (Zipf-like) from the vocabulary of
the LoCoMo observations so that the full-text index sees natural word
frequencies. ``--consolidated`` subjects get a published summary (plus a tail
of 3), the others stay raw. Reported: p50/p99 of ``Memory.recall(subject,
query=..., budget=500)`` over random subjects and six-word queries, beside the
baselines measured in the same run: ``Memory.recall(subject)`` without a query,
and the bare read of the subject's event rows (``SELECT <every event column>
FROM events WHERE tenant = ? AND subject = ? ORDER BY seq`` in a read transaction
on the store's connection).
With ``--embed`` every event is embedded first, so each recall with a query
also embeds the query and ranks by meaning.

    python bench/bench_recall_latency.py [--backend sqlite|postgres|both] [--subjects N] [--embed]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time

from common import LOCOMO, open_memory, percentile, postgres_reachable, report
from memlineage import Memory
from memlineage.meaning import extract
from memlineage.operations.locomo import load
from memlineage.store.rows import EVENT_COLUMNS


def vocabulary() -> list[str]:
    """LoCoMo's observation words, most frequent first."""
    counts: dict[str, int] = {}
    for conv in load(LOCOMO):
        for obs in conv.observations:
            for word in re.findall(r"[A-Za-z']+", obs.text):
                counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda w: -counts[w])


def sentence(rng: random.Random, words: list[str], weights: list[float], n: int = 14) -> str:
    return " ".join(rng.choices(words, weights, k=n)).capitalize() + "."


def built(memory: Memory, args: argparse.Namespace) -> bool:
    """Whether a kept store already holds this shape (its last subject is complete)."""
    last = memory.recall(f"user-{args.subjects - 1}")
    return len(last.events) == args.per_subject


def build(memory: Memory, args: argparse.Namespace, words: list[str]) -> None:
    rng = random.Random(7)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    start = time.perf_counter()
    batch: list[dict[str, str]] = []
    tail = 3
    for s in range(args.subjects):
        for n in range(args.per_subject - (tail if s < args.consolidated else 0)):
            batch.append(
                {"id": f"u{s}-{n}", "subject": f"user-{s}", "text": sentence(rng, words, weights)}
            )
            if len(batch) == 500:
                memory.add(batch)
                batch = []
    memory.add(batch)
    for s in range(args.consolidated):
        memory.consolidate(f"user-{s}")
        memory.add(
            [
                {"id": f"u{s}-t{n}", "subject": f"user-{s}", "text": sentence(rng, words, weights)}
                for n in range(tail)
            ]
        )
    took = time.perf_counter() - start
    print(f"built {args.subjects * args.per_subject:,} events in {took:.0f} s", flush=True)


def caught_up(memory: Memory) -> None:
    """Detection run over every event, as a worker's sweep does after adds: its stored
    item kinds are what a recall reads instead of extracting each event again."""
    start = time.perf_counter()
    memory.sweep()
    print(f"detection caught up in {time.perf_counter() - start:.0f} s", flush=True)


def embed(memory: Memory) -> None:
    """Embed what is not embedded yet (nothing, on a kept store embedded before)."""
    start = time.perf_counter()
    embedded = sum(run.embedded for run in memory.embed())
    print(f"embedded {embedded:,} events in {time.perf_counter() - start:.0f} s", flush=True)


def measure(memory: Memory, args: argparse.Namespace, words: list[str]) -> None:
    rng = random.Random(11)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    pools = {
        "summary": range(args.consolidated),
        "raw": range(args.consolidated, args.subjects),
    }
    for mode, pool in pools.items():
        plain: list[float] = []
        queried: list[float] = []
        bare: list[float] = []
        for _ in range(args.samples):
            subject = f"user-{rng.choice(pool)}"
            query = " ".join(rng.choices(words, weights, k=6))
            start = time.perf_counter()
            bare_read(memory, subject)
            bare.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            memory.recall(subject)
            plain.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            recalled = memory.recall(subject, query=query, budget=500)
            queried.append((time.perf_counter() - start) * 1000)
            assert recalled.mode == mode, (subject, recalled.reason)
        floor = percentile(bare, 50)
        report(f"bare read of the subject's events ({mode}) p50", floor, "ms")
        base = percentile(plain, 50)
        report(f"recall ({mode}) without query p50", base, "ms")
        report(f"recall ({mode}) without query p99", percentile(plain, 99), "ms")
        p50 = percentile(queried, 50)
        report(f"recall ({mode}) query+budget p50", p50, "ms", "no query", p50 / base)
        report(f"recall ({mode}) query+budget p99", percentile(queried, 99), "ms")
        report(f"recall ({mode}) query+budget p50 / bare read p50", p50 / floor, "x")


def bare_read(memory: Memory, subject: str) -> int:
    """The read a user would write for a subject's memory: its event rows, in order, on
    the store's own connection and in a read transaction as a recall's. Every column an
    event has, not ``SELECT *``: on PostgreSQL that would also ship the generated
    tsvector of the full-text index, which no reader wants."""
    store = memory.store
    with store._read() as tx:  # type: ignore[attr-defined]
        rows = tx.all(
            f"SELECT {EVENT_COLUMNS} FROM events WHERE tenant = ? AND subject = ? ORDER BY seq",
            (memory.tenant, subject),
        )
    return len(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--subjects", type=int, default=10_000)
    parser.add_argument("--per-subject", type=int, default=100)
    parser.add_argument("--consolidated", type=int, default=500)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument(
        "--keep",
        metavar="NAME",
        help="build into NAME.db (SQLite) / schema bench_NAME (PostgreSQL) and keep it;"
        " a later run with the same NAME and sizes measures without building",
    )
    parser.add_argument(
        "--optimize",
        action="store_true",
        help="SQLite: merge the FTS5 segments into one after loading (docs/recall.md)",
    )
    parser.add_argument(
        "--embed",
        action="store_true",
        help="embed every event first (the built-in model), so a query ranks by meaning"
        " too: the query's embedding and the vectors' read are then part of each recall",
    )
    args = parser.parse_args()
    words = vocabulary()
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    if args.backend == "both" and not postgres_reachable():
        backends = ("sqlite",)
    for backend in backends:
        print(f"== {backend}: {args.subjects:,} subjects x {args.per_subject} events", flush=True)
        with open_memory(backend, "bench", keep=args.keep) as memory:
            if args.keep and built(memory, args):
                print(f"kept store {args.keep}: already built", flush=True)
            else:
                build(memory, args, words)
            caught_up(memory)
            if args.embed:
                embed(memory)
            if args.optimize and backend == "sqlite":
                with memory.store._write() as tx:  # type: ignore[attr-defined]
                    tx.execute("INSERT INTO events_fts (events_fts) VALUES ('optimize')")
                print("FTS5 segments merged ('optimize')", flush=True)
            # The build ran detection over every event, which filled this process's
            # item cache; a recall server has not seen every event, so measure without it.
            extract.cached_event_items.cache_clear()
            measure(memory, args, words)
    return 0


if __name__ == "__main__":
    sys.exit(main())
