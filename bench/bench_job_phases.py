"""Where one consolidation job of a worker goes, phase by phase (PostgreSQL).

A worker (``memlineage worker --once``, in this process, one thread) drains
``--subjects`` queued subjects of 100 events each, built-in generator. Every
phase of a job is wrapped: on entering and leaving one, what passed since the
last mark is charged to the phase on top of the stack. Two passes over fresh
schemas:

- **round trips**, counted exactly on the wire (tests/wire.py's relay);
- **time**: wall, this thread's CPU and the server backend's CPU
  (``/proc/<pid>/schedstat``, nanoseconds) of the one connection the worker uses.

Per job: medians are not needed, the figures are means over all jobs (a trip
count is exact; CPU is summed). ``bookkeeping`` is everything but the
generator's own call. With ``--then-add N`` the worker first builds every subject
(untimed), then ``N`` events more are added to each and the timed pass is the same
worker's next job of every subject: what a worker cycling its subjects pays.

    python bench/bench_job_phases.py [--subjects 50] [--then-add 100]
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import psycopg

from common import PG_URL, Tracer, store_url
from memlineage import Memory
from memlineage.consolidation import consolidate as consolidation
from memlineage.consolidation import generation
from memlineage.meaning import extract
from memlineage.operations import metrics, worker
from memlineage.store.postgres import PostgresStore

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))
from wire import Relay  # the tests' counter: one definition of a round trip

APP = "memlineage-phases"
GENERATOR_PHASE = "generate (the generator's call)"


def caller(depth: int) -> str:
    return sys._getframe(depth).f_code.co_name


def instrument(tracer: Tracer, store: PostgresStore) -> None:
    w = tracer.wrap
    w(store, "claim", "claim")
    w(store, "finish", "finish")
    w(store, "renew", "heartbeat renew")
    w(store, "detect_next", "detect_next (between jobs)")
    w(store, "embedder_settings", "embedder check (between jobs)")
    w(worker, "tenant_configuration", "tenant config")
    w(store, "detect_conflicts", "detect (catch up)")
    w(store, "write_artifact", "write artifact")
    w(store, "release_state", lambda: f"release_state ({caller(3)})")
    w(store, "switch", "switch")
    w(store, "job_head", "read head")
    w(store, "consolidation_input", "read input")
    w(consolidation, "select", "select (CPU)")
    w(extract, "extract_with_stored", "extract items and open items (CPU)")
    w(generation, "judge", "parse + gate (CPU)")
    w(worker.TimeLimited, "generate", GENERATOR_PHASE)
    w(metrics, "consolidated", "metrics")
    w(consolidation, "input_root", "input root (CPU)")
    w(consolidation, "exceeds_budget", "render for the budget (CPU)")
    w(consolidation, "default_tokenizer", "tokenizer (CPU)")
    w(generation, "artifacts", "artifacts (CPU)")
    w(consolidation, "build", "build, the rest (CPU)")
    w(worker.Worker, "_report", "log line")
    tracer.wrap_context(store, "reader", lambda: f"read ({caller(4)})")


def seed(url: str, tenant: str, subjects: int, start: int = 0, count: int = 100) -> None:
    """Events ``start`` to ``start + count`` of every subject, checked, and every subject queued."""
    with Memory(url, tenant=tenant, detect_after_add=True) as memory:
        memory.set_tail_threshold(0)
        for s in range(subjects):
            subject = f"user-{s}"
            memory.add(
                [
                    {
                        "id": f"{subject}:m{i}",
                        "subject": subject,
                        "text": f"Ticket OPS-{i} for {subject} costs {i + 10} EUR;"
                        f" due 2026-12-{i % 28 + 1:02d}.",
                    }
                    for i in range(start, start + count)
                ]
            )
        memory.queue([f"user-{s}" for s in range(subjects)])


def backend_pids(base: str) -> list[int]:
    with psycopg.connect(base, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (APP,)
        ).fetchall()
    return [int(r[0]) for r in rows]


def one_pass(pg: str, subjects: int, count_trips: bool, then_add: int) -> tuple[Tracer, int]:
    """One worker drains the queue of a fresh schema; detection ran at seeding, so a job
    is the consolidation alone. With ``then_add``, the worker first builds every
    subject untimed, then ``then_add`` events more each are added and the same worker
    drains again, timed: a worker cycling its subjects, each job incremental."""
    relay = Relay(pg) if count_trips else None
    try:
        with store_url("postgres", pg=pg) as url:
            seed(url, "t", subjects)
            url = f"{url}&application_name={APP}"
            store = PostgresStore(relay.url_through(url) if relay else url, pool_size=1)
            try:
                with store.reader("t") as r:  # the pool's one connection, opened
                    r.head("user-0")
                pids = backend_pids(pg)
                assert len(pids) == 1, pids
                tracer = Tracer(relay, lambda: pids)
                instrument(tracer, store)
                options = worker.WorkerOptions(tenant="t", once=True)
                w = worker.Worker(store, options, log=io.StringIO())
                if then_add:
                    tracer.restore()
                    assert w.run()["published"] == subjects
                    seed(url.split("&application_name=")[0], "t", subjects, 100, then_add)
                    instrument(tracer, store)
                    w = worker.Worker(store, options, log=io.StringIO())
                tracer.last = tracer._now()
                try:
                    outcomes = w.run()
                    tracer.mark()
                finally:
                    tracer.restore()
            finally:
                store.close()
            assert outcomes["published"] == subjects, outcomes
    finally:
        if relay is not None:
            relay.close()
    return tracer, subjects


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subjects", type=int, default=50)
    parser.add_argument("--pg", default=PG_URL)
    parser.add_argument(
        "--then-add",
        type=int,
        default=0,
        help="build every subject first, then time the jobs of this many events more each",
    )
    args = parser.parse_args()
    trips, jobs = one_pass(args.pg, args.subjects, True, args.then_add)
    timed, _ = one_pass(args.pg, args.subjects, False, args.then_add)
    phases = sorted(set(trips.trips) | set(timed.wall), key=lambda p: -timed.wall[p])
    print(f"{'phase, per job':<44} {'trips':>6} {'wall ms':>8} {'cpu ms':>7} {'server ms':>9}")
    for p in phases:
        print(
            f"{p:<44} {trips.trips[p] / jobs:>6.1f} {timed.wall[p] / jobs * 1e3:>8.2f}"
            f" {timed.cpu[p] / jobs * 1e3:>7.2f} {timed.server[p] / jobs * 1e3:>9.2f}"
        )
    wall = sum(timed.wall.values())
    cpu = sum(timed.cpu.values())
    server = sum(timed.server.values())
    gen = timed.wall[GENERATOR_PHASE]
    print(
        f"{'total':<44} {sum(trips.trips.values()) / jobs:>6.1f} {wall / jobs * 1e3:>8.2f}"
        f" {cpu / jobs * 1e3:>7.2f} {server / jobs * 1e3:>9.2f}"
    )
    busy = cpu + server
    gen_busy = timed.cpu[GENERATOR_PHASE] + timed.server[GENERATOR_PHASE]
    print(
        f"bookkeeping share of wall: {(wall - gen) / wall:.3f};"
        f" of client+server CPU: {(busy - gen_busy) / busy:.3f}"
    )


if __name__ == "__main__":
    main()
