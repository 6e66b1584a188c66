"""The job queue on both backends: triggers, claims, fencing, retries, dead jobs, rebuilds."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

import wire
from fault_generators import MissingField
from memlineage import ArtifactStatus, BadInput, Memory, NotFound, SwitchFailure
from memlineage.consolidation.consolidate import prepare, publish
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.interfaces.cli import main
from memlineage.operations.queue import RetryPolicy
from memlineage.operations.worker import Worker, WorkerOptions
from memlineage.store import open_store
from memlineage.store.protocol import JobEnd

LEASE = 60.0


def add_range(memory: Memory, first: int, last: int, subject: str = "user-7") -> None:
    memory.add(
        [
            {"id": f"{subject}-m{i}", "subject": subject, "text": f"Ticket T-{i} costs {i} EUR."}
            for i in range(first, last + 1)
        ]
    )


def job_of(memory: Memory, subject: str = "user-7") -> Any:
    found = [j for j in memory.jobs() if j.subject == subject]
    assert len(found) <= 1, "one row per subject"
    return found[0] if found else None


def status_of(memory: Memory, artifact_id: str) -> ArtifactStatus:
    return {a.id: a.status for a in memory.artifacts()}[artifact_id]


def alias_history(memory: Memory, subject: str = "user-7") -> list[tuple[str, int, int]]:
    with memory.store._read() as tx:  # type: ignore[attr-defined]
        rows = tx.all(
            "SELECT artifact_id, source_epoch, covers_through FROM alias_history"
            " WHERE tenant = ? AND subject = ? ORDER BY switch_no",
            (memory.tenant, subject),
        )
    return [(r[0], int(r[1]), int(r[2])) for r in rows]


# -- triggers --


def test_triggers_coalesce_into_one_job_per_subject(memory: Memory) -> None:
    add_range(memory, 1, 3)
    memory.queue(["user-7"])
    memory.queue(["user-7", "user-7"])
    memory.schedule()
    jobs = memory.jobs()
    assert len(jobs) == 1
    assert jobs[0].state == "queued" and jobs[0].reason == "manual,schedule"


def test_manual_queueing_checks_every_subject_before_queueing_any(memory: Memory) -> None:
    add_range(memory, 1, 3)
    with pytest.raises(NotFound, match="user-9"):
        memory.queue(["user-7", "user-9"])
    assert memory.jobs() == []


def test_the_tail_trigger_follows_the_tenants_threshold(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as acme, Memory(db_url, tenant="other") as other:
        assert acme.tail_threshold == 100  # the default
        acme.set_tail_threshold(3)
        add_range(acme, 1, 3)
        assert acme.jobs() == []  # a tail of 3 is not past 3
        add_range(acme, 4, 4)
        assert [(j.subject, j.reason) for j in acme.jobs()] == [("user-7", "tail")]
        add_range(other, 1, 4)
        assert other.jobs() == []  # the other tenant keeps the default of 100
        acme.work()
        add_range(acme, 5, 7)  # the tail counts from the published coverage
        assert job_of(acme).state == "done"
        acme.set_tail_threshold(0)  # off
        add_range(acme, 8, 20)
        assert job_of(acme).state == "done"


def test_an_operation_that_outdates_the_summary_queues_its_rebuild(memory: Memory) -> None:
    add_range(memory, 1, 4)
    memory.revoke("user-7-m1")
    assert memory.jobs() == []  # nothing was ever published: nothing to rebuild
    first = memory.consolidate("user-7").artifact
    result = memory.revoke("user-7-m2")
    assert result.stale == (first.id,)
    job = job_of(memory)
    assert (job.state, job.reason, job.detail) == ("queued", "stale", "revoke of user-7-m2")
    reports = memory.work()
    assert [r.outcome for r in reports] == ["published"]
    recalled = memory.recall("user-7")
    assert recalled.mode == "summary" and recalled.artifact_id == reports[0].artifact_id
    memory.conflict("user-7-m3", "user-7-m4")  # no artifact goes stale, but I4 retires it
    assert job_of(memory).state == "queued" and memory.recall("user-7").mode == "raw"


def test_work_with_a_limit_runs_that_many_jobs_and_leaves_the_rest_queued(
    memory: Memory,
) -> None:
    for subject in ("user-1", "user-2", "user-3"):
        add_range(memory, 1, 2, subject)
    memory.queue(["user-1", "user-2", "user-3"])
    assert [r.outcome for r in memory.work(limit=2)] == ["published", "published"]
    assert [j.subject for j in memory.jobs("queued")] == ["user-3"]
    assert [r.subject for r in memory.work(limit=5)] == ["user-3"]
    with pytest.raises(BadInput, match="limit"):
        memory.work(limit=0)


def test_a_refused_operation_queues_nothing(memory: Memory) -> None:
    """The trigger lives in the operation's transaction: no commit, no job."""
    memory.set_tail_threshold(1)
    add_range(memory, 1, 1)
    memory.consolidate("user-7")
    assert job_of(memory) is None
    with pytest.raises(NotFound):
        memory.add(
            [
                {"id": "n-1", "subject": "user-7", "text": "one"},
                {"id": "n-2", "subject": "user-7", "text": "two", "supersedes": "nope"},
            ]
        )
    assert memory.jobs() == []


# -- claims, leases, fencing --


def test_a_claim_fences_out_the_previous_owner(memory: Memory) -> None:
    add_range(memory, 1, 3)
    memory.queue(["user-7"])
    store = memory.store
    first = store.claim(memory.tenant, "w1", 0.0, 5)  # a lease that has already run out
    assert first is not None and (first.state, first.token, first.attempts) == ("running", 1, 1)
    second = store.claim(memory.tenant, "w2", LEASE, 5)
    assert second is not None and (second.token, second.lease_owner) == (2, "w2")
    assert store.claim(memory.tenant, "w3", LEASE, 5) is None  # held by w2
    assert not store.renew(first, LEASE)
    assert not store.finish(first, JobEnd("done", "published"))
    job = job_of(memory)
    assert (job.state, job.token, job.lease_owner) == ("running", 2, "w2")
    assert store.renew(second, LEASE)
    assert store.finish(second, JobEnd("done", "published"))
    assert job_of(memory).state == "done"


def test_a_trigger_while_running_queues_the_job_again_when_it_ends(memory: Memory) -> None:
    add_range(memory, 1, 3)
    memory.queue(["user-7"])
    job = memory.store.claim(memory.tenant, "w1", LEASE, 5)
    assert job is not None
    memory.queue(["user-7"])
    assert job_of(memory).state == "running" and job_of(memory).rerun
    assert memory.store.finish(job, JobEnd("done", "published"))
    assert job_of(memory).state == "queued"


def test_a_lease_that_expires_on_the_last_attempt_parks_the_job_dead(memory: Memory) -> None:
    add_range(memory, 1, 3)
    memory.queue(["user-7"])
    for _ in range(2):
        assert memory.store.claim(memory.tenant, "w", 0.0, 2) is not None
    parked = memory.store.claim(memory.tenant, "w", 0.0, 2)
    assert parked is not None and parked.state == "dead"
    assert "lease expired" in (job_of(memory).last_error or "")
    assert memory.store.claim(memory.tenant, "w", 0.0, 2) is None


# -- retries and dead jobs --


class Failing(DeterministicGenerator):
    name = "failing"

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        raise RuntimeError("model unavailable")


def test_failures_back_off_then_park_the_job_dead_with_its_error(memory: Memory) -> None:
    add_range(memory, 1, 3)
    memory.queue(["user-7"])
    reports = memory.work(Failing(), retry=RetryPolicy(max_attempts=3, backoff=0))
    assert [r.outcome for r in reports] == ["failed", "failed", "dead"]
    job = job_of(memory)
    assert job.state == "dead" and job.attempts == 3
    assert "model unavailable" in (job.last_error or "")
    assert "gave up after 3 attempts" in (job.last_error or "")
    assert [a.status for a in memory.artifacts()] == [ArtifactStatus.FAILED] * 3
    memory.revoke("user-7-m1")  # an automatic trigger leaves a dead job for the operator
    assert job_of(memory).state == "dead"
    assert memory.work() == []
    memory.queue(["user-7"])  # a manual one revives it
    assert (job_of(memory).state, job_of(memory).attempts) == ("queued", 0)
    assert [r.outcome for r in memory.work()] == ["published"]


def test_a_retry_waits_for_its_backoff(memory: Memory) -> None:
    assert [RetryPolicy(backoff=5).delay(n) for n in (1, 2, 3)] == [5, 10, 20]
    assert RetryPolicy(backoff=5, max_backoff=8).delay(3) == 8
    add_range(memory, 1, 3)
    memory.queue(["user-7"])
    reports = memory.work(Failing(), retry=RetryPolicy(backoff=60))
    assert [r.outcome for r in reports] == ["failed"]  # not due again for a minute
    job = job_of(memory)
    assert job.state == "queued" and job.finished_at is not None
    assert job.due - job.finished_at == pytest.approx(60, abs=0.01)


def test_a_switch_outdated_by_a_concurrent_revoke_is_retried_at_once_uncounted(
    memory: Memory,
) -> None:
    add_range(memory, 1, 3)
    memory.queue(["user-7"])

    class RevokingMidway(DeterministicGenerator):
        def generate(self, request: GenerationRequest) -> dict[str, Any]:
            with Memory(memory.store.url, tenant=memory.tenant) as other:
                other.revoke("user-7-m2")
            return super().generate(request)

    reports = memory.work(RevokingMidway())  # the second attempt's revoke is a no-op
    assert [r.outcome for r in reports] == ["outdated", "published"]
    assert "epoch_changed" in (reports[0].error or "")
    job = job_of(memory)
    assert job.state == "done" and job.attempts == 1  # the outdated attempt did not count
    recalled = memory.recall("user-7")
    assert recalled.mode == "summary"
    assert all("user-7-m2" not in c.derived_from for c in recalled.claims)


# -- rebuilds and publishes --


def test_a_rebuild_never_takes_a_stale_rejected_or_failed_parent(memory: Memory) -> None:
    add_range(memory, 1, 4)
    published = memory.consolidate("user-7").artifact
    add_range(memory, 5, 6)
    rejected = memory.consolidate("user-7", MissingField()).artifact
    failed = memory.consolidate("user-7", Failing()).artifact
    assert status_of(memory, rejected.id) is ArtifactStatus.REJECTED
    assert status_of(memory, failed.id) is ArtifactStatus.FAILED
    memory.revoke("user-7-m1")
    assert status_of(memory, published.id) is ArtifactStatus.STALE
    [report] = memory.work()
    rebuilt = {a.id: a for a in memory.artifacts()}[report.artifact_id or ""]
    assert rebuilt.status is ArtifactStatus.PUBLISHED
    assert rebuilt.manifest.derived_from_artifact is None  # the only published one is stale
    assert "user-7-m1" not in rebuilt.manifest.input_ids
    add_range(memory, 7, 7)
    after = memory.consolidate("user-7").artifact
    assert after.manifest.derived_from_artifact == rebuilt.id  # a fresh parent is read


def test_one_publish_per_coverage_and_epoch_unless_forced(memory: Memory) -> None:
    add_range(memory, 1, 3)
    first = prepare(memory.store, memory.tenant, "user-7")
    assert publish(memory.store, memory.tenant, first).switched  # type: ignore[union-attr]
    redundant = prepare(memory.store, memory.tenant, "user-7")  # snapshot after the publish
    result = memory.store.switch(memory.tenant, redundant.id)
    assert not result.switched and result.reason is SwitchFailure.UP_TO_DATE
    assert status_of(memory, redundant.id) is ArtifactStatus.FAILED
    assert [h[0] for h in alias_history(memory)] == [first.id]
    forced = prepare(memory.store, memory.tenant, "user-7")
    assert memory.store.switch(memory.tenant, forced.id, force=True).switched
    assert [h[0] for h in alias_history(memory)] == [first.id, forced.id]
    other_budget = prepare(memory.store, memory.tenant, "user-7", budget=7)
    assert memory.store.switch(memory.tenant, other_budget.id).switched  # another summary


def test_a_publish_fails_the_candidates_it_made_unswitchable(memory: Memory) -> None:
    add_range(memory, 1, 3)
    orphan = prepare(memory.store, memory.tenant, "user-7")  # its worker died here
    winner = memory.consolidate("user-7", force=True)
    assert winner.switched
    assert status_of(memory, orphan.id) is ArtifactStatus.FAILED
    reason = {a.id: a.reason for a in memory.artifacts()}[orphan.id]
    assert reason == f"alias_moved: {winner.artifact.id} was published before its switch"
    late = memory.store.switch(memory.tenant, orphan.id)
    assert not late.switched and late.reason is SwitchFailure.ALIAS_MOVED


def test_a_forced_switch_over_a_moved_alias_is_refused_and_changes_nothing_else(
    memory: Memory,
) -> None:
    """The CAS is decided on the alias read under the lock: a candidate whose expected
    alias moved is refused even when forced, kept failed with the reason, and nothing a
    publish writes (alias, history, superseding) is written for it."""
    add_range(memory, 1, 3)
    store, tenant = memory.store, memory.tenant
    early = prepare(store, tenant, "user-7")  # both expect the empty alias
    late = prepare(store, tenant, "user-7")
    assert store.switch(tenant, early.id).switched
    refused = store.switch(tenant, late.id, force=True)  # past the redundancy check
    assert not refused.switched and refused.reason is SwitchFailure.ALIAS_MOVED
    assert refused.alias.artifact_id == early.id
    stored = {a.id: a for a in memory.artifacts()}
    assert stored[early.id].status is ArtifactStatus.PUBLISHED
    assert stored[late.id].status is ArtifactStatus.FAILED
    assert (stored[late.id].reason or "").startswith("alias_moved: ")
    assert [h[0] for h in alias_history(memory)] == [early.id]
    with store._read() as tx:  # type: ignore[attr-defined]
        edges = tx.all("SELECT parent FROM derivation WHERE child = ?", (late.id,))
    assert sorted(r[0] for r in edges) == sorted(late.manifest.input_ids)


def test_an_artifact_of_an_unknown_subject_is_not_written(memory: Memory) -> None:
    add_range(memory, 1, 3)
    artifact = prepare(memory.store, memory.tenant, "user-7")
    stray = replace(artifact, id="summary:nobody:000003-0", subject="nobody")
    with pytest.raises(NotFound):
        memory.store.write_artifact(memory.tenant, stray)
    assert stray.id not in {a.id for a in memory.artifacts()}
    with memory.store._read() as tx:  # type: ignore[attr-defined]
        assert tx.all("SELECT parent FROM derivation WHERE child = ?", (stray.id,)) == []


def test_a_worker_takes_a_rollout_between_two_jobs(memory: Memory) -> None:
    """The claim reads the tenant's active configuration: a worker that kept what it read
    for one version builds the next job with the version rolled out meanwhile."""
    add_range(memory, 1, 3)
    add_range(memory, 1, 3, subject="user-8")
    store, tenant = memory.store, memory.tenant
    v1 = store.add_generator_config(tenant, {"generator": "deterministic"})
    store.activate_config(tenant, v1, "rollout")
    worker = Worker(store, WorkerOptions(tenant=tenant, once=True), log=io.StringIO())
    memory.queue(["user-7"])
    first = worker.step()
    v2 = store.add_generator_config(tenant, {"generator": "deterministic"})
    store.activate_config(tenant, v2, "rollout")
    memory.queue(["user-8"])
    second = worker.step()
    assert first is not None and second is not None
    versions = {a.id: a.manifest.config_version for a in memory.artifacts()}
    assert (versions[first.artifact_id or ""], versions[second.artifact_id or ""]) == (v1, v2)


@contextmanager
def worker_on_the_wire(pg_url: str) -> Iterator[tuple[wire.Relay, Callable[[], str]]]:
    """A worker whose round trips the relay counts (tests/wire.py), and one turn of its
    loop over a consolidation job: the checks between jobs, then the job (its subject)."""
    relay = wire.Relay(pg_url)
    store = open_store(relay.url_through(pg_url))
    try:
        worker = Worker(store, WorkerOptions(tenant="acme", once=True), log=io.StringIO())

        def turn() -> str:
            worker.detect_step()
            worker.embed_step()
            report = worker.step()
            assert report is not None and report.outcome == "published"
            return report.subject

        yield relay, turn
    finally:
        store.close()
        relay.close()


def test_a_worker_job_on_postgres_costs_nine_round_trips(pg_url: str) -> None:
    """One turn of a worker's loop over a consolidation job, generation aside (tests/wire.py):
    the detection and embedding checks between jobs (1 each); the claim, which also reads
    the release state (1); the head (1); the snapshot (1); the artifact written (1); the
    switch (2); the finish (1)."""
    with Memory(pg_url, tenant="acme", detect_after_add=True) as memory:
        memory.set_tail_threshold(0)
        for subject in ("user-1", "user-2", "user-3"):
            add_range(memory, 1, 20, subject)
        memory.queue(["user-1", "user-2", "user-3"])
    with worker_on_the_wire(pg_url) as (relay, turn):
        turn()  # the pool's connection, the statements prepared
        trips = [relay.count(turn), relay.count(turn)]
    assert trips == [9, 9]


def test_a_worker_job_on_a_published_summary_costs_nine_round_trips_too(pg_url: str) -> None:
    """The same turn over a subject whose summary is published and fresh: the switch
    re-reads the new events and the policies only, in the round trip it had; a job whose
    epoch moved since re-reads the rest in one more."""
    with Memory(pg_url, tenant="acme", detect_after_add=True) as memory:
        memory.set_tail_threshold(0)
        for subject in ("user-1", "user-2", "user-3"):
            add_range(memory, 1, 20, subject)
            assert memory.consolidate(subject).switched
            add_range(memory, 21, 25, subject)
        memory.revoke("user-3-m2")  # an input of user-3's summary: its epoch moved
        memory.queue(["user-1", "user-2", "user-3"])
    done: list[str] = []
    with worker_on_the_wire(pg_url) as (relay, turn):
        turn()  # the pool's connection, the statements prepared
        trips = [relay.count(lambda: done.append(turn())) for _ in range(2)]
    assert done == ["user-2", "user-3"]
    assert trips == [9, 10]


def test_a_worker_cycling_many_subjects_reads_each_one_s_next_job_in_one_trip(
    pg_url: str,
) -> None:
    """A worker that built 40 subjects (more than it kept outputs for by count before)
    still holds what it wrote of each: a subject's next job reads the new events in the
    one round trip of the snapshot, not a second one for the summary's output."""
    subjects = [f"user-{n}" for n in range(40)]
    with Memory(pg_url, tenant="acme", detect_after_add=True) as memory:
        memory.set_tail_threshold(0)
        for subject in subjects:
            add_range(memory, 1, 20, subject)
        memory.queue(subjects)
    with worker_on_the_wire(pg_url) as (relay, turn):
        for _ in subjects:
            turn()
        with Memory(pg_url, tenant="acme", detect_after_add=True) as memory:
            for subject in subjects:
                add_range(memory, 21, 23, subject)
            memory.queue(subjects)
        trips = [relay.count(turn) for _ in subjects]
    assert trips == [9] * len(subjects)


# -- command line --


def cli(db: str, *argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main([*argv, "--db", db, "--tenant", "acme", "--json"], stdout=out)
    text = out.getvalue()
    return code, json.loads(text) if text else None


def test_jobs_and_worker_on_the_command_line(memory: Memory, db_url: str) -> None:
    add_range(memory, 1, 3)
    code, doc = cli(db_url, "jobs", "add", "user-7")
    assert code == 0 and [(j["subject"], j["state"]) for j in doc] == [("user-7", "queued")]
    code, doc = cli(db_url, "jobs", "add", "nobody")
    message = "field 'subject': no events for subject 'nobody'"
    assert (code, doc) == (2, {"error": {"code": 2, "type": "NotFound", "message": message}})
    code, doc = cli(db_url, "jobs")
    assert code == 0 and doc[0]["reason"] == "manual" and doc[0]["due"].endswith("Z")
    code, doc = cli(db_url, "worker", "--once")
    assert code == 0 and doc["outcomes"] == {"published": 1}
    code, doc = cli(db_url, "jobs", "--state", "done")
    assert code == 0 and doc[0]["last_outcome"] == "published" and doc[0]["attempts"] == 1
    code, doc = cli(db_url, "jobs", "settings", "--tail", "5")
    assert code == 0 and doc == {"tail_threshold": 5}
    code, doc = cli(db_url, "jobs", "schedule")
    assert code == 0 and doc == []  # nothing is behind
    code, doc = cli(db_url, "worker", "--once", "--generator", "nowhere:nothing")
    assert code == 2
    code, doc = cli(db_url, "worker", "--once", "--all-tenants", "--schedule", "60")
    assert code == 2  # the schedule sweeps one tenant


def test_a_worker_with_a_schedule_consolidates_what_no_trigger_queued(
    memory: Memory, db_url: str
) -> None:
    memory.set_tail_threshold(0)
    add_range(memory, 1, 3)
    add_range(memory, 1, 2, subject="user-8")
    assert memory.jobs() == []
    code, doc = cli(db_url, "worker", "--once", "--schedule", "60")
    assert code == 0 and doc["outcomes"] == {"published": 2}
    assert {j.reason for j in memory.jobs()} == {"schedule"}
    assert memory.recall("user-8").mode == "summary"
