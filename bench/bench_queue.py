"""Job queue throughput and claim latency on PostgreSQL.

- **End-to-end jobs/s** with 1, 2 and 4 worker processes (``memlineage worker
  --once --concurrency N``) over subjects of 100 events each: claim, snapshot,
  select, extract, generate (built-in), gate, write, switch, finish. Measured
  on the database clock from the first claim to the last finish, so process
  start-up is left out. Baseline, same run: the bare switch transaction
  (``store.switch`` of prepared candidates) with 1 connection and with 4
  processes.
- **Baselines for the scaling**, same run: a fixed pure-Python loop in N
  processes (the cores this shared machine gives now), and a no-op job
  (claim, then finish: the queue alone) with N processes. A scaling figure is
  read against them: N workers cannot beat N spinning processes.
- **Claim latency** with 10,000 queued jobs (p50/p99), against a single-row
  primary-key UPDATE in its own transaction on the same table.

    python bench/bench_queue.py [--subjects 500] [--pg postgresql://…] [--src DIR]

``--src``: the source tree the workers run (default: this checkout's), to time
two versions of the code with one benchmark, run after run. Detection runs at
seeding (``detect_after_add``), so a job is the consolidation alone.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

from common import percentile, postgres_reachable, report, store_url
from memlineage import Memory
from memlineage.consolidation.consolidate import prepare

HERE = Path(__file__).resolve().parent
PG = os.environ.get("MEMLINEAGE_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")
SPAWN = multiprocessing.get_context("spawn")
WORKER = [sys.executable, "-m", "memlineage", "worker"]
WORKERS = (1, 2, 4)
SEED_BATCH = 50  # subjects per append


def seed(url: str, tenant: str, subjects: int, per_subject: int) -> None:
    with Memory(url, tenant=tenant, detect_after_add=True) as memory:
        memory.set_tail_threshold(0)  # the benchmark queues explicitly
        for first in range(0, subjects, SEED_BATCH):
            memory.add(
                [
                    {
                        "id": f"user-{s}:m{i}",
                        "subject": f"user-{s}",
                        "text": f"Ticket OPS-{i} for user-{s} costs {i + 10} EUR;"
                        f" due 2026-12-{i % 28 + 1:02d}.",
                    }
                    for s in range(first, min(subjects, first + SEED_BATCH))
                    for i in range(per_subject)
                ]
            )


def clone(url: str, source: str, tenant: str) -> None:
    """A copy of every row of tenant ``source`` as ``tenant``'s (seeding again would take
    minutes: detection runs at seeding)."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        tables = conn.execute(
            "SELECT table_name, string_agg(column_name, ', ' ORDER BY ordinal_position)"
            " FROM information_schema.columns WHERE table_schema = current_schema()"
            " AND is_generated = 'NEVER' GROUP BY table_name"
            " HAVING bool_or(column_name = 'tenant')"
        ).fetchall()
        for table, columns in tables:
            chosen = ", ".join("%s" if c == "tenant" else c for c in columns.split(", "))
            conn.execute(
                f"INSERT INTO {table} ({columns}) SELECT {chosen} FROM {table}"  # type: ignore[arg-type]
                " WHERE tenant = %s",
                (tenant, source),
            )


def spin(barrier: object, rounds: int) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    total = 0
    for i in range(rounds):
        total += i * i % 7


def run_together(procs: list[Any], barrier: Any) -> float:
    """Start ``procs``, release them together at ``barrier``; the seconds until all exit."""
    for proc in procs:
        proc.start()
    barrier.wait()
    started = time.perf_counter()
    for proc in procs:
        proc.join()
        assert proc.exitcode == 0
    return time.perf_counter() - started


def bench_spin(rounds: int = 10_000_000, quiet: bool = False) -> dict[int, float]:
    """Rounds of a pure-Python loop per second in N processes: the cores free now."""
    rates: dict[int, float] = {}
    for processes in (1, 2) if quiet else WORKERS:
        barrier = SPAWN.Barrier(processes + 1)
        procs = [SPAWN.Process(target=spin, args=(barrier, rounds)) for _ in range(processes)]
        rates[processes] = processes * rounds / run_together(procs, barrier)
        if quiet:
            continue
        report(
            f"CPU spin, {processes} process(es)",
            rates[processes] / 1e6,
            "M rounds/s",
            "1 process",
            rates[processes] / rates[1],
        )
    return rates


def claim_finish(url: str, tenant: str, src: str, barrier: object) -> None:
    sys.path.insert(0, src)
    from memlineage.store import open_store
    from memlineage.store.protocol import JobEnd

    store = open_store(url)
    try:
        barrier.wait()  # type: ignore[attr-defined]
        while (job := store.claim(tenant, f"noop-{os.getpid()}", 60.0, 5)) is not None:
            assert store.finish(job, JobEnd("done", "noop"))
    finally:
        store.close()


def bench_noop(url: str, subjects: int, src: str) -> None:
    """No-op jobs per second (claim, finish) with N processes: the queue alone."""
    rates: dict[int, float] = {}
    Memory(url, tenant="noop").close()  # the schema
    for processes in WORKERS:
        tenant = f"noop{processes}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO jobs (tenant, subject, state, reason, due, queued_at)"
                " SELECT %s, 'user-' || n, 'queued', 'manual', 0, 0"
                " FROM generate_series(1, %s) AS n",
                (tenant, subjects),
            )
        barrier = SPAWN.Barrier(processes + 1)
        procs = [
            SPAWN.Process(target=claim_finish, args=(url, tenant, src, barrier))
            for _ in range(processes)
        ]
        for proc in procs:
            proc.start()
        barrier.wait()
        for proc in procs:
            proc.join()
            assert proc.exitcode == 0
        rates[processes] = jobs_rate(url, tenant, subjects, "noop")
        report(
            f"no-op jobs, {processes} process(es)",
            rates[processes],
            "jobs/s",
            "1 process",
            rates[processes] / rates[1],
        )


def jobs_rate(url: str, tenant: str, subjects: int, outcome: str) -> float:
    """Jobs per second on the database clock, from the first claim to the last finish."""
    with psycopg.connect(url) as conn:
        first, last, done = conn.execute(
            "SELECT min(started_at), max(finished_at), count(*) FILTER"
            " (WHERE last_outcome = %s) FROM jobs WHERE tenant = %s",
            (outcome, tenant),
        ).fetchone()  # type: ignore[misc]
    assert done == subjects, f"{done} of {subjects} {outcome}"
    return float(subjects / (last - first))


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
        clone(url, "seeded", tenant)
        with Memory(url, tenant=tenant) as memory:
            ids = [prepare(memory.store, tenant, f"user-{s}").id for s in range(subjects)]
        barrier = SPAWN.Barrier(processes + 1)
        procs = [
            SPAWN.Process(target=switch_some, args=(url, tenant, ids[p::processes], barrier))
            for p in range(processes)
        ]
        rates[processes] = subjects / run_together(procs, barrier)
        report(f"bare switch tx, {processes} process(es)", rates[processes], "tx/s")
    return rates


def run_workers(
    url: str, subjects: int, src: str, workers: int, tenant: str
) -> tuple[float, float]:
    """Drain ``subjects`` queued jobs with ``workers`` processes: (jobs/s, worker CPU ms a job)."""
    clone(url, "seeded", tenant)
    with Memory(url, tenant=tenant) as memory:
        memory.queue([f"user-{s}" for s in range(subjects)])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [*WORKER, "--db", url, "--tenant", tenant, "--once", "--concurrency", str(workers)],
        check=True,
        env={**os.environ, "PYTHONPATH": src},
        stderr=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return jobs_rate(url, tenant, subjects, "published"), cpu / subjects * 1000


def bench_workers(url: str, subjects: int, baseline: float, src: str, rounds: int) -> None:
    """Rounds of 1, 2 and 4 workers, each round after a CPU spin of 1 and 2 processes (the
    cores free at that moment); the medians over the rounds of each ratio."""
    rates: dict[int, list[float]] = {w: [] for w in WORKERS}
    cpus: dict[int, list[float]] = {w: [] for w in WORKERS}
    spins: list[float] = []
    for r in range(rounds):
        spin_rates = bench_spin(quiet=True)
        spins.append(spin_rates[2] / spin_rates[1])
        for workers in WORKERS:
            rate, cpu = run_workers(url, subjects, src, workers, f"jobs{workers}r{r}")
            rates[workers].append(rate)
            cpus[workers].append(cpu)
        print(
            f"round {r + 1}: spin 2/1 {spins[-1]:.2f};"
            + "; ".join(f" {w} worker(s) {rates[w][-1]:.1f} jobs/s" for w in WORKERS),
            flush=True,
        )
    report("CPU spin, 2 / 1 process(es), median", statistics.median(spins), "x")
    for workers in WORKERS:
        rate = statistics.median(rates[workers])
        report(
            f"end-to-end jobs, {workers} worker(s), median",
            rate,
            "jobs/s",
            "bare switch tx (1 connection)",
            rate / baseline,
        )
        report(
            f"  worker CPU a job, {workers} worker(s), median",
            statistics.median(cpus[workers]),
            "ms",
        )
        if workers > 1:
            ratios = [n / one for n, one in zip(rates[workers], rates[1], strict=True)]
            report(
                f"  {workers} workers / 1 worker, median of rounds", statistics.median(ratios), "x"
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
    parser.add_argument("--subjects", type=int, default=500)
    parser.add_argument("--src", default=str(HERE.parent / "src"))
    parser.add_argument("--rounds", type=int, default=3, help="rounds of 1, 2, 4 workers")
    parser.add_argument("--skip-claims", action="store_true", help="no claim latency")
    parser.add_argument("--queued", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=1_000)
    parser.add_argument("--pg", default=PG)
    args = parser.parse_args()
    if not postgres_reachable(args.pg):
        return
    with store_url("postgres", pg=args.pg) as url:
        seed(url, "seeded", args.subjects, 100)
        bench_spin()
        bench_noop(url, args.subjects, args.src)
        rates = bench_switch(url, args.subjects)
        bench_workers(url, args.subjects, rates[1], args.src, args.rounds)
        if not args.skip_claims:
            bench_claim(url, args.queued, args.samples)


if __name__ == "__main__":
    main()
