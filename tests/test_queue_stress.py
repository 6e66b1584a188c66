"""The job queue under load: worker processes beside processes that write the raw layer.

PostgreSQL: 8 worker processes over 200 subjects for ``MEMLINEAGE_STRESS_SECONDS``
(default 20; CI may set 60). SQLite: 4 worker processes, shorter. Afterwards the
invariants hold for every subject.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import queue_workers
from memlineage import ArtifactStatus, Memory
from memlineage.raw.validity import source_state

pytestmark = pytest.mark.slow
SPAWN = multiprocessing.get_context("spawn")
TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"
SECONDS = float(os.environ.get("MEMLINEAGE_STRESS_SECONDS", "20"))
TAIL = 2  # the tail trigger's threshold
WORKER = [sys.executable, "-m", "memlineage", "worker", "--tenant", "acme"]


def stress(db_url: str, *, workers: int, subjects: int, mutators: int, seconds: float) -> None:
    queue_workers.seed_subjects(db_url, "acme", subjects, per_subject=4)
    with Memory(db_url, tenant="acme") as memory:
        memory.set_tail_threshold(TAIL)
        memory.schedule()  # every subject starts queued
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}"}
    supervisor = subprocess.Popen(
        [*WORKER, "--db", db_url, "--concurrency", str(workers), "--poll", ".2", "--backoff", ".5"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    results = SPAWN.SimpleQueue()
    writers = [
        SPAWN.Process(
            target=queue_workers.mutate, args=(db_url, "acme", subjects, seconds, seed, results)
        )
        for seed in range(mutators)
    ]
    try:
        for proc in writers:
            proc.start()
        for proc in writers:
            proc.join(seconds + 120)
            assert proc.exitcode == 0
    finally:
        supervisor.send_signal(signal.SIGTERM)  # each worker finishes its job, then exits
        _out, log = supervisor.communicate(timeout=180)
    assert supervisor.returncode == 0, log[-2000:]
    done = [results.get() for _ in writers]
    assert sum(d.get("revoke", 0) for d in done) > 0 and sum(d.get("append", 0) for d in done) > 0
    check_invariants(db_url, subjects)
    drain_and_check_every_summary(db_url, env)
    check_invariants(db_url, subjects)


def check_invariants(db_url: str, subjects: int) -> None:
    with Memory(db_url, tenant="acme") as memory:
        store = memory.store
        with store._read() as tx:  # type: ignore[attr-defined]
            history = tx.all(
                "SELECT subject, switch_no, artifact_id, source_epoch, covers_through"
                " FROM alias_history WHERE tenant = ? ORDER BY subject, switch_no",
                ("acme",),
            )
        artifacts = {a.id: a for a in memory.artifacts()}
        jobs = memory.jobs()
        published_ever = {r[2] for r in history}
        # Published artifacts == successful switches: each switch published one artifact once.
        assert len(published_ever) == len(history)
        for artifact in artifacts.values():
            was_published = artifact.status in (ArtifactStatus.PUBLISHED, ArtifactStatus.SUPERSEDED)
            assert not was_published or artifact.id in published_ever, artifact.id
        for artifact_id in published_ever:
            assert artifacts[artifact_id].status in (
                ArtifactStatus.PUBLISHED,
                ArtifactStatus.SUPERSEDED,
                ArtifactStatus.STALE,
            )
        by_subject: dict[str, list[tuple[int, int]]] = {}
        for subject, _no, _artifact, epoch, covers in history:
            by_subject.setdefault(subject, []).append((int(epoch), int(covers)))
        for subject, steps in by_subject.items():
            covers = [c for _e, c in steps]
            assert covers == sorted(covers), f"coverage regressed for {subject}: {covers}"
            assert len(set(steps)) == len(steps), f"a redundant publish for {subject}: {steps}"
        for index in range(subjects):
            subject = queue_workers.subject_name(index)
            with store.reader("acme") as reader:
                events = reader.events(subject)
                ops = reader.operations(subject)
            state = source_state(events, ops, store.policy)
            for artifact in artifacts.values():
                if artifact.subject == subject and artifact.status is ArtifactStatus.PUBLISHED:
                    invalid = set(artifact.manifest.input_ids) & set(state.invalid)
                    assert not invalid, f"{artifact.id} derives from invalid {invalid}"
            recalled = memory.recall(subject)
            if recalled.mode == "summary":  # no stale artifact is visible
                visible = artifacts[recalled.artifact_id or ""]
                assert visible.status is ArtifactStatus.PUBLISHED
                assert not set(visible.manifest.input_ids) & set(state.invalid)
        assert len(jobs) == subjects  # one row per subject
        for job in jobs:
            assert job.state in ("done", "queued", "dead"), job
            assert job.state != "dead" or job.last_error, job
        assert history  # workers published beside the writers (how much depends on the machine)


def drain_and_check_every_summary(db_url: str, env: dict[str, str]) -> None:
    """Once the writers stop, one more worker run leaves every subject with a fresh summary."""
    subprocess.run(
        [*WORKER, "--db", db_url, "--once", "--concurrency", "2", "--backoff", "0"],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        timeout=300,
    )
    with Memory(db_url, tenant="acme") as memory:
        for job in memory.jobs():
            assert job.state in ("done", "dead"), job
            if job.state == "done":
                recalled = memory.recall(job.subject)
                assert recalled.mode == "summary", (job.subject, recalled.reason)
                assert len(recalled.tail) <= TAIL, job.subject  # a short tail queues nothing


def test_stress_postgres_eight_workers_two_hundred_subjects(pg_url: str) -> None:
    stress(pg_url, workers=8, subjects=200, mutators=2, seconds=SECONDS)


def test_stress_sqlite_four_workers(tmp_path: Path) -> None:
    stress(str(tmp_path / "stress.db"), workers=4, subjects=50, mutators=1, seconds=SECONDS / 2)
