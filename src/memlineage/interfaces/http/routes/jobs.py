"""The job queue and its worker: list, queue, schedule and run jobs, the tail trigger,
and sweeping candidates orphaned by crashed runs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from memlineage.interfaces.http.deps import Mem, known_subject
from memlineage.interfaces.http.schemas import (
    JobOut,
    JobSettingsIn,
    JobSettingsOut,
    JobsIn,
    RunJobsIn,
    RunJobsOut,
    SweepIn,
    SweepOut,
)
from memlineage.operations.worker import drained_json

router = APIRouter()


@router.post("/v1/sweep", response_model=SweepOut)
def sweep(body: SweepIn, memory: Mem) -> dict[str, Any]:
    """Fail the tenant's candidates orphaned by crashed runs (`sweep`)."""
    return {"failed": [s.to_json() for s in memory.sweep(body.older_than)]}


@router.get("/v1/jobs", response_model=list[JobOut])
def jobs(
    memory: Mem, state: Annotated[str | None, Query(max_length=20)] = None
) -> list[dict[str, Any]]:
    """The tenant's job queue (`jobs [--state S]`)."""
    return [j.to_json() for j in memory.jobs(state)]


@router.post("/v1/jobs", response_model=list[JobOut])
def queue_jobs(body: JobsIn, memory: Mem) -> list[dict[str, Any]]:
    """Queue consolidations (`jobs add`).

    One job per subject, due now (a dead job is revived); an unknown subject is 404 and
    nothing is queued."""
    for subject in body.subjects:
        known_subject(memory, subject)
    return [j.to_json() for j in memory.queue(body.subjects, force=body.force)]


@router.post("/v1/jobs/run", response_model=RunJobsOut)
def run_jobs(body: RunJobsIn, memory: Mem) -> dict[str, Any]:
    """Run up to `max_jobs` of the tenant's due jobs now, as `worker --once` would.

    A deployment runs `memlineage worker` processes; this is a bounded run for
    a tenant without one, or for a test."""
    return drained_json(memory.work(limit=body.max_jobs))


@router.post("/v1/jobs/schedule", response_model=list[JobOut])
def schedule_jobs(memory: Mem) -> list[dict[str, Any]]:
    """Queue every subject whose summary misses events or is not fresh (`jobs schedule`)."""
    return [j.to_json() for j in memory.schedule()]


@router.get("/v1/jobs/settings", response_model=JobSettingsOut)
def job_settings(memory: Mem) -> dict[str, Any]:
    """The tenant's tail trigger (`jobs settings`)."""
    return {"tail_threshold": memory.tail_threshold}


@router.post("/v1/jobs/settings", response_model=JobSettingsOut)
def set_job_settings(body: JobSettingsIn, memory: Mem) -> dict[str, Any]:
    """Set the tail trigger (`jobs settings --tail N`; 0 turns it off)."""
    memory.set_tail_threshold(body.tail_threshold)
    return {"tail_threshold": memory.tail_threshold}
