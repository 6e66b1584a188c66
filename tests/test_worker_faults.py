"""The source document's faults, with real worker processes and real connections.

For each fault: nothing half-finished is ever recallable, the failed artifact
is kept with its reason and never used as a parent, and the next worker run
publishes a correct artifact. Faults are injected with test generators that
the worker loads with ``--generator fault_generators:NAME``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memlineage import ArtifactStatus, Memory
from memlineage.store.protocol import Job

pytestmark = pytest.mark.slow
TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"
EVENTS = [
    {"id": "m-1", "subject": "user-7", "text": "Never deploy on Fridays.", "kind": "constraint"},
    {"id": "m-2", "subject": "user-7", "text": "The budget is at most 4,500 EUR."},
    {"id": "m-3", "subject": "user-7", "text": "Ticket OPS-12 must be closed before 2026-12-20."},
    {"id": "m-4", "subject": "user-7", "text": "I prefer tea over coffee."},
]


def start_worker(
    db_url: str, *args: str, sleep: float | None = None, started: Path | None = None
) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}"}
    if sleep is not None:
        env["FAULT_SLEEP"] = str(sleep)
    if started is not None:
        env["FAULT_STARTED"] = str(started)
    return subprocess.Popen(
        [sys.executable, "-m", "memlineage", "worker", "--db", db_url, "--tenant", "acme", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, list[dict[str, Any]]]:
    """Wait for a worker; its exit code and its job log lines."""
    _out, err = proc.communicate(timeout=timeout)
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    # A worker also logs the detection job's runs (event "detect"): not job lines.
    return proc.returncode, [line for line in lines if line.get("event") != "detect"]


def run_worker(db_url: str, *args: str, sleep: float | None = None) -> list[dict[str, Any]]:
    code, lines = finish(start_worker(db_url, "--once", *args, sleep=sleep))
    assert code == 0, lines
    return lines


def job(db_url: str) -> Job:
    with Memory(db_url, tenant="acme") as memory:
        [found] = memory.jobs()
    return found


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def running(db_url: str) -> bool:
    return job(db_url).state == "running"


@pytest.fixture
def queued(db_url: str) -> str:
    """Four events of user-7 and a manual job for them."""
    with Memory(db_url, tenant="acme") as memory:
        memory.add(EVENTS)
        memory.queue(["user-7"])
    return db_url


def assert_nothing_recallable(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        recalled = memory.recall("user-7")
    assert recalled.mode == "raw" and recalled.artifact_id is None
    assert [e.id for e in recalled.events] == ["m-1", "m-2", "m-3", "m-4"]


def assert_next_run_publishes(db_url: str, failed_id: str | None) -> None:
    lines = run_worker(db_url)
    assert [line["outcome"] for line in lines] == ["published"]
    with Memory(db_url, tenant="acme") as memory:
        recalled = memory.recall("user-7")
        artifacts = {a.id: a for a in memory.artifacts()}
    assert recalled.mode == "summary" and recalled.artifact_id == lines[0]["artifact_id"]
    published = artifacts[lines[0]["artifact_id"]]
    assert published.manifest.input_ids == ("m-1", "m-2", "m-3", "m-4")
    assert published.manifest.derived_from_artifact is None  # never a failed parent
    values = {str(c.value) for c in recalled.claims}
    assert "4500" in values or "4500.0" in values or any("4,500" in c.text for c in recalled.claims)
    if failed_id is not None:  # the failed artifact is kept, with its reason
        assert artifacts[failed_id].status in (ArtifactStatus.FAILED, ArtifactStatus.REJECTED)
        assert artifacts[failed_id].reason
    assert job(db_url).state == "done"


def test_a_generation_timeout_fails_the_attempt_and_keeps_the_artifact(queued: str) -> None:
    lines = run_worker(
        queued, "--timeout", "1", "--backoff", "1", "--generator", "fault_generators:Sleepy"
    )
    assert [(line["outcome"], line["state"]) for line in lines] == [("failed", "queued")]
    assert "took longer than 1 s" in lines[0]["error"]
    assert_nothing_recallable(queued)
    with Memory(queued, tenant="acme") as memory:
        [failed] = memory.artifacts()
    assert failed.status is ArtifactStatus.FAILED and failed.output is None
    assert failed.reason == "generation failed"
    assert "GenerationTimeout" in failed.gate.failures[0].detail
    assert job(queued).attempts == 1 and "took longer" in (job(queued).last_error or "")
    time.sleep(1.2)  # the retry's backoff
    assert_next_run_publishes(queued, failed.id)


def test_a_missing_output_field_rejects_the_attempt(queued: str) -> None:
    lines = run_worker(queued, "--backoff", "1", "--generator", "fault_generators:MissingField")
    assert [(line["outcome"], line["artifact_status"]) for line in lines] == [
        ("failed", "rejected")
    ]
    assert "claims" in lines[0]["error"]
    assert_nothing_recallable(queued)
    with Memory(queued, tenant="acme") as memory:
        [rejected] = memory.artifacts()
    assert rejected.status is ArtifactStatus.REJECTED
    assert rejected.reason == "output rejected by the parser"
    time.sleep(1.2)
    assert_next_run_publishes(queued, rejected.id)


def test_sigkill_after_the_artifact_is_written_and_before_the_switch(queued: str) -> None:
    proc = start_worker(
        queued, "--once", "--lease", "1", "--generator", "fault_generators:killed_before_switch"
    )
    code, lines = finish(proc)
    assert code == -signal.SIGKILL and lines == []
    assert_nothing_recallable(queued)
    with Memory(queued, tenant="acme") as memory:
        [orphan] = memory.artifacts()
    assert orphan.status is ArtifactStatus.CANDIDATE  # written, never switched
    assert job(queued).state == "running"  # until its lease runs out
    time.sleep(1.2)
    assert_next_run_publishes(queued, orphan.id)
    with Memory(queued, tenant="acme") as memory:
        reason = {a.id: a.reason for a in memory.artifacts()}[orphan.id]
    assert reason is not None and reason.startswith("alias_moved")
    assert job(queued).attempts == 2


def test_sigkill_while_holding_a_lease(queued: str) -> None:
    proc = start_worker(queued, "--lease", "1", "--generator", "fault_generators:Sleepy", sleep=60)
    wait_for(lambda: running(queued), "the worker to claim the job")
    proc.send_signal(signal.SIGKILL)
    assert finish(proc)[0] == -signal.SIGKILL
    assert_nothing_recallable(queued)
    with Memory(queued, tenant="acme") as memory:
        assert memory.artifacts() == []  # killed mid-generation: nothing was written
    time.sleep(1.2)
    assert_next_run_publishes(queued, None)
    assert job(queued).attempts == 2 and job(queued).token == 2


def test_a_worker_paused_past_its_lease_cannot_finish_the_job(queued: str, tmp_path: Path) -> None:
    started = tmp_path / "generating"
    paused = start_worker(
        queued,
        "--once",
        "--lease",
        "1",
        "--generator",
        "fault_generators:Sleepy",
        sleep=3,
        started=started,
    )
    # Paused while generating, as a stalled model call would be: paused inside the
    # job's short detection transaction instead, it would hold the subject's clock
    # lock and the other worker would wait for it (the test then hung 120 s).
    wait_for(started.exists, "the first worker to start generating")
    paused.send_signal(signal.SIGSTOP)
    try:
        time.sleep(1.5)  # its lease runs out; its heartbeat is stopped with it
        lines = run_worker(queued)  # another worker claims the job and publishes
        assert [(line["outcome"], line["token"]) for line in lines] == [("published", 2)]
    finally:
        paused.send_signal(signal.SIGCONT)
    code, late = finish(paused)
    assert code == 0
    assert [(line["outcome"], line["token"]) for line in late] == [("fenced", 1)]
    after = job(queued)
    assert (after.state, after.token, after.last_outcome) == ("done", 2, "published")
    with Memory(queued, tenant="acme") as memory:
        statuses = sorted(str(a.status) for a in memory.artifacts())
        recalled = memory.recall("user-7")
    assert statuses == ["failed", "published"]  # the late one's switch was refused
    assert recalled.artifact_id == lines[0]["artifact_id"]


def test_sigterm_lets_the_current_job_finish_then_exits(queued: str) -> None:
    proc = start_worker(queued, "--generator", "fault_generators:Sleepy", sleep=2)
    wait_for(lambda: running(queued), "the worker to claim the job")
    proc.send_signal(signal.SIGTERM)
    code, lines = finish(proc)
    assert code == 0
    assert [line["outcome"] for line in lines] == ["published"]
    assert job(queued).state == "done"


def test_a_second_sigterm_abandons_the_job_uncounted(queued: str) -> None:
    proc = start_worker(queued, "--generator", "fault_generators:Sleepy", sleep=60)
    wait_for(lambda: running(queued), "the worker to claim the job")
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    code, lines = finish(proc, timeout=30)
    assert code == 0
    assert [line["outcome"] for line in lines] == ["abandoned"]
    after = job(queued)
    assert (after.state, after.attempts, after.lease_owner) == ("queued", 0, None)
    assert_nothing_recallable(queued)
    assert_next_run_publishes(queued, None)


def test_sigterm_to_a_supervisor_reaches_every_worker_process(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add(EVENTS)
        memory.add([{**e, "id": f"u8-{e['id']}", "subject": "user-8"} for e in EVENTS])
        memory.queue(["user-7", "user-8"])

    def both_running() -> bool:
        with Memory(db_url, tenant="acme") as memory:
            return [j.state for j in memory.jobs()] == ["running", "running"]

    proc = start_worker(
        db_url, "--concurrency", "2", "--generator", "fault_generators:Sleepy", sleep=2
    )
    wait_for(both_running, "both worker processes to claim a job")
    proc.send_signal(signal.SIGTERM)
    code, lines = finish(proc)
    assert code == 0
    assert sorted((line["subject"], line["outcome"]) for line in lines) == [
        ("user-7", "published"),
        ("user-8", "published"),
    ]
    assert len({line["worker"] for line in lines}) == 2
