"""Job queue commands: ``worker``, and ``jobs`` (list, add, schedule, settings)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import click

from memlineage.interfaces.cli.app import (
    Report,
    command,
    global_options,
    memory,
    reporting,
    root,
    settings,
)
from memlineage.operations import worker as workers
from memlineage.operations.queue import JOB_STATES, RetryPolicy
from memlineage.store.protocol import Job


@command(
    "worker",
    "memlineage worker --concurrency 4 --db postgresql://localhost/memory",
)
@click.option("--concurrency", default=1, show_default=True, help="worker processes")
@click.option("--once", is_flag=True, help="run the jobs that are due, then exit")
@click.option("--all-tenants", is_flag=True, help="serve every tenant, not only --tenant")
@click.option("--lease", default=60.0, show_default=True, help="seconds a claim lasts unrenewed")
@click.option(
    "--timeout", default=30.0, show_default=True, help="seconds a generator may take (0: none)"
)
@click.option("--max-attempts", default=5, show_default=True, help="failed attempts before dead")
@click.option("--backoff", default=5.0, show_default=True, help="first retry delay, doubling")
@click.option("--poll", default=1.0, show_default=True, help="seconds between empty claims")
@click.option("--schedule", type=float, help="queue outdated subjects every so many seconds")
@click.option("--generator", help="module:attr of a generator (instance or factory)")
@click.option(
    "--metrics-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="serve Prometheus metrics on 127.0.0.1:PORT/metrics (worker i of N: PORT+i)",
)
def worker(
    concurrency: int,
    once: bool,
    all_tenants: bool,
    lease: float,
    timeout: float,
    max_attempts: int,
    backoff: float,
    poll: float,
    schedule: float | None,
    generator: str | None,
    metrics_port: int | None,
) -> Report:
    """Claim and run consolidation jobs until stopped (SIGTERM: finish the job, then exit).

    Logs one JSON line per job on stderr: subject, artifact, outcome, duration.
    """
    conf = settings()
    options = workers.WorkerOptions(
        url=conf.db,
        tenant=None if all_tenants else conf.tenant,
        once=once,
        lease=lease,
        timeout=timeout,
        poll=poll,
        schedule=schedule,
        retry=RetryPolicy(max_attempts=max_attempts, backoff=backoff),
        generator=generator,
        metrics_port=metrics_port,
    )
    outcomes = workers.run(options, concurrency)
    doc = {"processes": concurrency, "jobs": sum(outcomes.values()), "outcomes": dict(outcomes)}
    text = f"{doc['jobs']} job(s): " + (
        ", ".join(f"{n} {k}" for k, n in sorted(outcomes.items())) or "none due"
    )
    return Report(doc, text, 1 if outcomes.get("crashed_processes") else 0)


@root.group(
    "jobs",
    invoke_without_command=True,
    epilog="Example: memlineage jobs --state dead --json   |   memlineage jobs add user-7",
)
@global_options
@click.option("--state", type=click.Choice(JOB_STATES), help="only jobs in this state")
@click.pass_context
def jobs(ctx: click.Context, state: str | None) -> int | None:
    """List the job queue: state, attempts, reasons, last error, lease owner."""
    if ctx.invoked_subcommand is not None:
        return None
    return reporting(_list)(state)


def _list(state: str | None) -> Report:
    with memory() as mem:
        found = mem.jobs(state)
    return Report([j.to_json() for j in found], "\n".join(_line(j) for j in found) or "no jobs")


def _line(job: Job) -> str:
    line = f"{job.subject:<20} {job.state:<8} attempts {job.attempts}  [{job.reason}]"
    if job.state == "running":
        line += f"  owner {job.lease_owner}, lease ends in {job.due - time.time():.0f} s"
    elif job.state == "queued":
        line += f"  due in {max(0.0, job.due - time.time()):.0f} s"
    if job.last_error:
        line += f"  last error: {job.last_error}"
    return line


def subcommand(name: str, example: str) -> Callable[[Callable[..., Report]], Any]:
    def register(func: Callable[..., Report]) -> Any:
        return jobs.command(name, epilog=f"Example: {example}")(global_options(reporting(func)))

    return register


@subcommand("add", "memlineage jobs add user-7 user-8")
@click.argument("subjects", nargs=-1, required=True, metavar="SUBJECT...")
@click.option("--force", is_flag=True, help="publish a new summary even if up to date")
def add(subjects: tuple[str, ...], force: bool) -> Report:
    """Queue a consolidation of each subject now (a dead job is revived)."""
    with memory() as mem:
        queued = mem.queue(list(subjects), force=force)
    return Report(
        [j.to_json() for j in queued], "\n".join(f"queued {j.subject} ({j.state})" for j in queued)
    )


@subcommand("schedule", "memlineage jobs schedule   (e.g. from cron)")
def schedule() -> Report:
    """Queue every subject whose summary misses events or is no longer fresh."""
    with memory() as mem:
        queued = mem.schedule()
    return Report([j.to_json() for j in queued], f"queued {len(queued)} subject(s)")


@subcommand("settings", "memlineage jobs settings --tail 50")
@click.option("--tail", type=click.IntRange(min=0), help="queue past this many events (0: off)")
def job_settings(tail: int | None) -> Report:
    """Show or set the tenant's tail trigger: queue once the unconsolidated tail exceeds N."""
    with memory() as mem:
        if tail is not None:
            mem.set_tail_threshold(tail)
        threshold = mem.tail_threshold
    return Report({"tail_threshold": threshold}, f"tail threshold: {threshold or 'off'}")
