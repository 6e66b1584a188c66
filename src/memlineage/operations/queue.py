"""Consolidation jobs: what queues them, and what an attempt's outcome means for its job.

The queue is a table in the same database as the data (``store/jobs.py``): one
row per subject, so repeated triggers coalesce and at most one consolidation
per subject is queued or running. Triggers:

- ``tail``: an append left more than the tenant's threshold of events
  unconsolidated (queued in the append's transaction);
- ``stale``: an invalidating operation outdated the published summary (queued
  in the operation's transaction);
- ``manual``: :func:`queue` (``memlineage jobs add``);
- ``schedule``: :func:`schedule` queues every subject whose summary misses
  events or is no longer fresh (``memlineage jobs schedule``, or a worker's
  ``--schedule``).

Correctness never rests on the queue: a worker that lost its job may still
reach the switch, and the alias compare-and-swap is what refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memlineage.consolidation.consolidate import Consolidation
from memlineage.errors import BadInput, NotFound
from memlineage.model import ArtifactStatus, SwitchFailure
from memlineage.store.protocol import Job, JobEnd, Store
from memlineage.store.triggers import DEFAULT_TAIL_THRESHOLD, MANUAL, SCHEDULE

JOB_STATES = ("queued", "running", "done", "dead")
SHOWN_FAILURES = 3  # gate failures quoted in a job's error; the artifact keeps them all

__all__ = [
    "DEFAULT_TAIL_THRESHOLD",
    "JOB_STATES",
    "Job",
    "JobEnd",
    "RetryPolicy",
    "end_of",
    "failed",
    "queue",
    "schedule",
]


@dataclass(frozen=True)
class RetryPolicy:
    """Failed attempts are retried after ``backoff * 2**(attempt - 1)`` seconds (at most
    ``max_backoff``); after ``max_attempts`` the job is parked ``dead`` with its error."""

    max_attempts: int = 5
    backoff: float = 5.0
    max_backoff: float = 600.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise BadInput("must be at least 1", field="max_attempts")
        if self.backoff < 0 or self.max_backoff < 0:
            raise BadInput("must not be negative", field="backoff")

    def delay(self, attempts: int) -> float:
        return float(min(self.max_backoff, self.backoff * 2 ** max(0, attempts - 1)))


def queue(store: Store, tenant: str, subjects: Sequence[str], force: bool = False) -> list[Job]:
    """Queue a manual consolidation of each subject (a dead job is revived).

    Every subject is checked before the first is queued: an unknown one changes nothing.
    """
    if not subjects:
        raise BadInput("name at least one subject", field="subject")
    with store.reader(tenant) as reader:
        for subject in subjects:
            if reader.head(subject) is None:
                raise NotFound(f"no events for subject {subject!r}", field="subject")
    detail = "forced by request" if force else "requested"
    return [store.enqueue(tenant, s, MANUAL, detail, force) for s in dict.fromkeys(subjects)]


def schedule(store: Store, tenant: str) -> list[Job]:
    """The schedule trigger: queue every subject whose summary misses events or is not fresh."""
    return [
        store.enqueue(tenant, subject, SCHEDULE, "summary missing, behind or outdated")
        for subject in store.outdated_subjects(tenant)
    ]


def end_of(job: Job, result: Consolidation, policy: RetryPolicy) -> JobEnd:
    """What one consolidation attempt means for its job.

    - published, or nothing to do (the summary was up to date): ``done``;
    - the switch refused because the source or the alias moved during the attempt:
      ``outdated``, queued again at once and not counted (another writer of the
      subject committed meanwhile; the next attempt starts from what it left);
    - the generator failed, timed out or its output was rejected: a failed attempt.
    """
    artifact_id = result.artifact.id
    if result.up_to_date:
        return JobEnd("done", "up_to_date", artifact_id=artifact_id)
    if result.switched:
        return JobEnd("done", "published", artifact_id=artifact_id)
    switch = result.switch
    if switch is not None:
        if switch.reason is SwitchFailure.UP_TO_DATE:
            return JobEnd("done", "up_to_date", artifact_id=artifact_id)
        error = f"switch refused: {switch.reason}: {switch.detail}"
        return JobEnd("queued", "outdated", counted=False, error=error, artifact_id=artifact_id)
    artifact = result.artifact
    failures = artifact.gate.failures
    codes = "; ".join(
        f"{f.code} {f.item}: {f.detail}" if f.detail else f"{f.code} {f.item}"
        for f in failures[:SHOWN_FAILURES]
    )
    if len(failures) > SHOWN_FAILURES:
        codes += f"; and {len(failures) - SHOWN_FAILURES} more"
    status = "rejected" if artifact.status is ArtifactStatus.REJECTED else str(artifact.status)
    error = f"{status}: {artifact.reason or 'no reason given'}"
    if codes:
        error += f" ({codes})"
    return failed(job, error, policy, artifact_id)


def failed(job: Job, error: str, policy: RetryPolicy, artifact_id: str | None = None) -> JobEnd:
    """A failed attempt: retried after a backoff, or ``dead`` after the last allowed one."""
    if job.attempts >= policy.max_attempts:
        error = f"{error} [gave up after {job.attempts} attempts]"
        return JobEnd("dead", "dead", error=error, artifact_id=artifact_id)
    return JobEnd(
        "queued",
        "failed",
        delay=policy.delay(job.attempts),
        error=error,
        artifact_id=artifact_id,
    )
