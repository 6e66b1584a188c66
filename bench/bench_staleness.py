"""Staleness and detection costs, on SQLite and PostgreSQL.

1. Stale the descendants of one event that has 1,000 descendants, in derivation
   graphs of 10,000 and of 1,000,000 edges. Baseline, in the same run: the bare
   recursive query (the same ``WITH RECURSIVE … UNION`` counting the
   descendants) over the same graph; beside it the same query returning their
   ids (staling returns them). ``--pad N`` stales again with N bytes more in
   each artifact's manifest and output (the bench's rows are otherwise tiny).
   Each timed run is rolled back, so every repeat stales the same 1,000
   artifacts. Reported: the ratio of the two graph sizes (it must follow the
   descendants, not the graph) and ours / bare.
2. The append and the contradiction detection job that runs right after it:
   ``store.append`` (the plain append transaction) against ``Memory.add``
   (append + detection), same events, same batches.

    python bench/bench_staleness.py [--quick] [--backend sqlite|postgres|both] [--pad N]
"""

from __future__ import annotations

import argparse
import contextlib
import random
from collections.abc import Callable
from typing import Any

from bench_gate import locomo_events
from bench_store import make_events
from common import median_seconds, report, store_url
from memlineage import Memory
from memlineage.model import NewEvent
from memlineage.raw.ingest import parse_event, utc_now
from memlineage.store.base import SqlStore
from memlineage.store.sql import Tx
from memlineage.store.staleness import mark_descendants_stale

TENANT, SUBJECT = "bench", "user-1"
DESCENDANTS = 1_000

BARE = (
    "WITH RECURSIVE below(node) AS ("
    " SELECT child FROM derivation WHERE tenant = ? AND subject = ? AND parent = ?"
    " UNION"
    " SELECT d.child FROM derivation d JOIN below b ON d.parent = b.node"
    " WHERE d.tenant = ? AND d.subject = ?)"
    " SELECT COUNT(*) FROM below"
)
# The same query handing the descendants' ids back, as staling must (RETURNING id).
BARE_IDS = BARE.replace("SELECT COUNT(*) FROM below", "SELECT node FROM below")


def build_graph(store: SqlStore, edges: int, seed: int = 7, pad: int = 0) -> None:
    """One event ``root`` with a tree of 1,000 artifacts below it, in ``edges`` edges.

    ``pad``: bytes added to each artifact's manifest and output, as a real summary's
    (its input ids, statements and claims) would have; 0 leaves the rows tiny.
    """
    rng = random.Random(seed)
    tree = [(("root" if k == 0 else f"d{(k - 1) // 3}"), f"d{k}") for k in range(DESCENDANTS)]
    noise: list[tuple[str, str]] = []
    nodes = max(1, (edges - DESCENDANTS) // 3)
    for i in range(edges - DESCENDANTS):
        child = i % nodes + 1
        parent = rng.randrange(0, child)  # a DAG: parents come first
        noise.append((f"n{parent}" if parent else f"ev{i % 97}", f"n{child}"))
    now = utc_now()
    manifest = '{"artifactId": "x"%s}' % (f', "pad": "{"x" * pad}"' if pad else "")
    output = f'{{"pad": "{"y" * pad}"}}' if pad else None
    ids = [f"d{k}" for k in range(DESCENDANTS)] + [f"n{k}" for k in range(1, 10_001)]
    with store._write() as tx:
        for start in range(0, len(noise) + len(tree), 50_000):
            chunk = (tree + noise)[start : start + 50_000]
            tx.executemany(
                "INSERT INTO derivation (tenant, subject, parent, child) VALUES (?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [(TENANT, SUBJECT, p, c) for p, c in chunk],
            )
        tx.executemany(
            "INSERT INTO artifacts (tenant, subject, id, manifest, output, gate, created_at)"
            " VALUES (?, ?, ?, ?, ?, '{}', ?)",
            [(TENANT, SUBJECT, i, manifest, output, now) for i in ids],
        )
        tx.executemany(
            "INSERT INTO artifact_status (tenant, subject, id, status, reason, status_at)"
            " VALUES (?, ?, ?, 'published', NULL, ?)",
            [(TENANT, SUBJECT, i, now) for i in ids],
        )
    if store.dialect == "postgres":
        with store._write() as tx:
            tx.execute("ANALYZE derivation")
            tx.execute("ANALYZE artifacts")
            tx.execute("ANALYZE artifact_status")


def rolled_back(store: SqlStore, work: Callable[[Tx], Any]) -> Callable[[], None]:
    """A run of ``work`` inside a transaction that is always rolled back."""

    class Undo(Exception):
        pass

    def run() -> None:
        try:
            with store._write() as tx:
                work(tx)
                raise Undo
        except Undo:
            pass

    return run


def bench_staleness(
    store: SqlStore, label: str, sizes: list[int], repeats: int, pad: int = 0
) -> None:
    results: dict[int, tuple[float, float]] = {}
    if pad:
        label = f"{label} ({pad:,}-byte manifests and outputs)"
    for edges in sizes:
        with store._write() as tx:
            tx.execute("DELETE FROM derivation WHERE tenant = ?", (TENANT,))
            tx.execute("DELETE FROM artifacts WHERE tenant = ?", (TENANT,))
            tx.execute("DELETE FROM artifact_status WHERE tenant = ?", (TENANT,))
        build_graph(store, edges, pad=pad)

        def bare(tx: Tx, prelude: str | None = store.descendants_prelude) -> None:
            if prelude:
                tx.execute(prelude)
            count = tx.one(BARE, (TENANT, SUBJECT, "root", TENANT, SUBJECT))[0]
            assert int(count) == DESCENDANTS, count

        def bare_ids(tx: Tx, prelude: str | None = store.descendants_prelude) -> None:
            if prelude:
                tx.execute(prelude)
            rows = tx.all(BARE_IDS, (TENANT, SUBJECT, "root", TENANT, SUBJECT))
            assert len(rows) == DESCENDANTS, len(rows)

        def ours(tx: Tx, prelude: str | None = store.descendants_prelude) -> None:
            stale = mark_descendants_stale(tx, TENANT, SUBJECT, ["root"], "bench", prelude)
            assert len(stale) == DESCENDANTS, len(stale)

        for _ in range(2):  # warm caches (and psycopg's prepared statements) for both
            rolled_back(store, bare)()
            rolled_back(store, bare_ids)()
            rolled_back(store, ours)()
        bare_s = median_seconds(rolled_back(store, bare), repeats)
        ids_s = median_seconds(rolled_back(store, bare_ids), repeats)
        ours_s = median_seconds(rolled_back(store, ours), repeats)
        results[edges] = (bare_s, ours_s)
        report(f"{label}: bare recursive query, {edges:,} edges", bare_s * 1000, "ms")
        report(
            f"{label}: stale 1,000 descendants, {edges:,} edges",
            ours_s * 1000,
            "ms",
            "bare query",
            ours_s / bare_s,
        )
        report(f"{label}: bare query returning the ids, {edges:,} edges", ids_s * 1000, "ms")
        report(
            f"{label}: stale / bare query returning the ids, {edges:,} edges", ours_s / ids_s, "x"
        )
    small, large = min(results), max(results)
    if small != large:
        report(
            f"{label}: bare, {large:,} / {small:,} edges",
            results[large][0] / results[small][0],
            "x",
        )
        report(
            f"{label}: stale, {large:,} / {small:,} edges",
            results[large][1] / results[small][1],
            "x",
        )


def workloads(total: int) -> list[tuple[str, list[list[NewEvent]]]]:
    """Item-dense synthetic events (a contradiction nearly every event), and LoCoMo."""
    rows = make_events("user-bench", 0, total)
    synthetic = [[parse_event(r) for r in rows[i : i + 500]] for i in range(0, total, 500)]
    out = [("synthetic, item-dense", synthetic)]
    observations = [
        NewEvent(id=e.id, subject=e.subject, text=e.text, at=e.at) for e in locomo_events()
    ]
    if observations:
        out.append(
            (
                "LoCoMo observations",
                [observations[i : i + 100] for i in range(0, len(observations), 100)],
            )
        )
    return out


def bench_detection(url_for: Callable[[], str], label: str, total: int, repeats: int) -> None:
    for name, batches in workloads(total):
        count = sum(len(b) for b in batches)

        def plain(batches: list[list[NewEvent]] = batches) -> None:
            with Memory(url_for(), tenant="bench") as memory:
                for batch in batches:
                    memory.store.append("bench", batch)

        def with_detection(batches: list[list[NewEvent]] = batches) -> None:
            with Memory(url_for(), tenant="bench") as memory:
                for batch in batches:
                    memory.add(batch)

        plain_s = median_seconds(plain, repeats)
        full_s = median_seconds(with_detection, repeats)
        report(f"{label}, {name}: append transaction", count / plain_s, "events/s")
        report(
            f"{label}, {name}: append + detection job",
            count / full_s,
            "events/s",
            "append transaction",
            plain_s / full_s,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="100,000 edges instead of 1,000,000")
    parser.add_argument("--append-events", type=int, default=5_000)
    parser.add_argument(
        "--pad",
        type=int,
        default=0,
        help="also stale artifacts whose manifest and output carry PAD bytes more each",
    )
    args = parser.parse_args()
    sizes = [10_000, 100_000 if args.quick else 1_000_000]
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    for backend in backends:
        run_backend(backend, sizes, args)


def run_backend(backend: str, sizes: list[int], args: argparse.Namespace) -> None:
    """Both parts on ``backend``: every database a new one, all dropped at the end."""
    with contextlib.ExitStack() as stores:

        def fresh() -> str:
            return stores.enter_context(store_url(backend))

        store = Memory(fresh()).store
        assert isinstance(store, SqlStore)
        bench_staleness(store, backend, sizes, args.repeats)
        if args.pad:
            bench_staleness(store, backend, sizes, args.repeats, args.pad)
        store.close()
        bench_detection(fresh, backend, args.append_events, max(3, args.repeats // 2))


if __name__ == "__main__":
    main()
