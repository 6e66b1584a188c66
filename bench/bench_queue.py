"""Job queue throughput and claim latency on PostgreSQL.

- **End-to-end jobs/s** with 1, 2 and 4 worker processes (``memlineage worker
  --once --concurrency N``) over subjects of 100 events each: claim, snapshot,
  select, extract, generate (built-in), gate, write, switch, finish. Measured
  on the database clock from the first claim to the last finish, so process
  start-up is left out. Baseline, same run: the bare switch transaction
  (``store.switch`` of prepared candidates) with 1 connection and with 4
  processes.
- **Claim latency** with 10,000 queued jobs (p50/p99), against a single-row
  primary-key UPDATE in its own transaction on the same table.

    python bench/bench_queue.py [--subjects 200] [--pg postgresql://…]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from common import percentile, postgres_reachable, report, store_url
from memlineage import Memory
from memlineage.consolidation.consolidate import prepare

HERE = Path(__file__).resolve().parent
PG = os.environ.get("MEMLINEAGE_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
SPAWN = multiprocessing.get_context("spawn")
WORKER = [sys.executable, "-m", "memlineage", "worker"]


def seed(url: str, tenant: str, subjects: int, per_subject: int) -> None:
    with Memory(url, tenant=tenant) as memory:
        memory.set_tail_threshold(0)  # the benchmark queues explicitly
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
                    for i in range(per_subject)
                ]
            )


def switch_some(url: str, tenant: str, artifact_ids: list[str], barrier: object) -> None:
    with Memory(url, tenant=tenant) as memory:
        barrier.wait()  # type: ignore[attr-defined]
        for artifact_id in artifact_ids:
            assert memory.store.switch(tenant, artifact_id).switched


def bench_switch(url: str, subjects: int) -> dict[int, float]:
    """Switch transactions per second on prepared candidates, one subject each."""
    rates: dict[int, float] = {}
    for processes in (1, 4):
        tenant = f"switch{processes}"
        seed(url, tenant, subjects, 100)
        with Memory(url, tenant=tenant) as memory:
            ids = [prepare(memory.store, tenant, f"user-{s}").id for s in range(subjects)]
        barrier = SPAWN.Barrier(processes + 1)
        procs = [
            SPAWN.Process(target=switch_some, args=(url, tenant, ids[p::processes], barrier))
            for p in range(processes)
        ]
        for proc in procs:
            proc.start()
        barrier.wait()
        started = time.perf_counter()
        for proc in procs:
            proc.join()
            assert proc.exitcode == 0
        rates[processes] = subjects / (time.perf_counter() - started)
        report(f"bare switch tx, {processes} process(es)", rates[processes], "tx/s")
    return rates


def bench_workers(url: str, subjects: int, baseline: float) -> None:
    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}
    for workers in (1, 2, 4):
        tenant = f"jobs{workers}"
        seed(url, tenant, subjects, 100)
        with Memory(url, tenant=tenant) as memory:
            memory.queue([f"user-{s}" for s in range(subjects)])
        subprocess.run(
            [*WORKER, "--db", url, "--tenant", tenant, "--once", "--concurrency", str(workers)],
            check=True,
            env=env,
            stderr=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        with psycopg.connect(url) as conn:
            first, last, done = conn.execute(
                "SELECT min(started_at), max(finished_at), count(*) FILTER"
                " (WHERE last_outcome = 'published') FROM jobs WHERE tenant = %s",
                (tenant,),
            ).fetchone()  # type: ignore[misc]
        assert done == subjects, f"{done} of {subjects} published"
        rate = subjects / (last - first)
        report(
            f"end-to-end jobs, {workers} worker(s)",
            rate,
            "jobs/s",
            "bare switch tx (1 connection)",
            rate / baseline,
        )


def bench_claim(url: str, queued: int, samples: int) -> None:
    tenant = "claims"
    with Memory(url, tenant=tenant) as memory:
        store = memory.store
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO jobs (tenant, subject, state, reason, due, queued_at)"
                " SELECT %s, 'user-' || n, 'queued', 'manual', n, n"
                " FROM generate_series(1, %s) AS n",
                (tenant, queued),
            )
            conn.execute("ANALYZE jobs")
        claim_ms, update_ms = [], []
        with psycopg.connect(url, autocommit=True) as conn:
            for n in range(samples):
                start = time.perf_counter()
                job = store.claim(tenant, "bench", 60.0, 5)
                claim_ms.append((time.perf_counter() - start) * 1000)
                assert job is not None
                start = time.perf_counter()
                with conn.transaction():
                    conn.execute(
                        "UPDATE jobs SET lease_owner = %s WHERE tenant = %s AND subject = %s",
                        ("bench", tenant, f"user-{queued - n}"),
                    )
                update_ms.append((time.perf_counter() - start) * 1000)
    base50, base99 = percentile(update_ms, 50), percentile(update_ms, 99)
    report("single-row UPDATE by key p50", base50, "ms")
    report("single-row UPDATE by key p99", base99, "ms")
    p50, p99 = percentile(claim_ms, 50), percentile(claim_ms, 99)
    report(f"claim, {queued:,} queued, p50", p50, "ms", "UPDATE by key p50", p50 / base50)
    report(f"claim, {queued:,} queued, p99", p99, "ms", "UPDATE by key p99", p99 / base99)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subjects", type=int, default=200)
    parser.add_argument("--queued", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=1_000)
    parser.add_argument("--pg", default=PG)
    args = parser.parse_args()
    if not postgres_reachable(args.pg):
        return
    with store_url("postgres", pg=args.pg) as url:
        rates = bench_switch(url, args.subjects)
        bench_workers(url, args.subjects, rates[1])
        bench_claim(url, args.queued, args.samples)


if __name__ == "__main__":
    main()
