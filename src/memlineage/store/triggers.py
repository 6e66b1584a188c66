"""Queue triggers that run inside other transactions, and the jobs row mapping.

The tail trigger runs in an append's transaction and the staleness trigger in
an invalidating operation's, each after that writer's clock lock (I7), so the
job is queued at the same commit as its cause, or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memlineage.store.protocol import Job
from memlineage.store.sql import Tx

# Reasons a job was queued (the ``reason`` column holds the set, comma-separated).
TAIL, STALE, MANUAL, SCHEDULE = "tail", "stale", "manual", "schedule"
TRIGGERS = (TAIL, STALE, MANUAL, SCHEDULE)

# Queue a consolidation once a subject's unconsolidated tail exceeds this many
# events, unless the tenant set its own threshold (0 turns the trigger off).
DEFAULT_TAIL_THRESHOLD = 100

JOB_COLUMNS = (
    "tenant, subject, state, reason, detail, force, rerun, due, attempts, token, lease_owner,"
    " queued_at, started_at, finished_at, last_error, last_outcome, last_artifact"
)


def job_from_row(row: Sequence[Any]) -> Job:
    (tenant, subject, state, reason, detail, force, rerun, due, attempts, token, owner) = row[:11]
    queued_at, started_at, finished_at, error, outcome, artifact = row[11:]
    return Job(
        tenant=tenant,
        subject=subject,
        state=state,
        reason=reason,
        detail=detail,
        force=bool(force),
        rerun=bool(rerun),
        due=float(due),
        attempts=int(attempts),
        token=int(token),
        lease_owner=owner,
        queued_at=float(queued_at),
        started_at=None if started_at is None else float(started_at),
        finished_at=None if finished_at is None else float(finished_at),
        last_error=error,
        last_outcome=outcome,
        last_artifact=artifact,
    )


def enqueue(
    tx: Tx,
    now: str,
    tenant: str,
    subject: str,
    reason: str,
    detail: str | None = None,
    force: bool = False,
) -> Job:
    """Queue a consolidation of ``subject``, coalescing into its one row.

    - no row, or ``done``: queued now, attempts from zero;
    - ``queued``: stays queued (a manual request makes it due now), the reason joins the set;
    - ``running``: flagged ``rerun``, so it is queued again as soon as it finishes;
    - ``dead``: stays parked for an operator; only a manual request revives it.
    """
    row = tx.one(
        f"{_enqueue_sql(now)} RETURNING {JOB_COLUMNS}",
        _enqueue_params(tenant, subject, reason, detail, force),
    )
    return job_from_row(row)


def _enqueue_sql(now: str) -> str:
    """The upsert of :func:`enqueue`, without its RETURNING."""
    fresh = "(jobs.state = 'done' OR (jobs.state = 'dead' AND ?))"
    return (
        "INSERT INTO jobs (tenant, subject, state, reason, detail, force, due, queued_at)"
        f" VALUES (?, ?, 'queued', ?, ?, ?, {now}, {now})"
        " ON CONFLICT (tenant, subject) DO UPDATE SET"
        f" state = CASE WHEN {fresh} THEN 'queued' ELSE jobs.state END,"
        f" reason = CASE WHEN {fresh} THEN excluded.reason"
        " WHEN (',' || jobs.reason || ',') LIKE ? THEN jobs.reason"
        " ELSE jobs.reason || ',' || excluded.reason END,"
        " detail = excluded.detail,"
        f" force = CASE WHEN {fresh} THEN excluded.force ELSE (jobs.force OR excluded.force) END,"
        " rerun = (jobs.state = 'running' OR jobs.rerun),"
        f" due = CASE WHEN {fresh} OR (jobs.state = 'queued' AND ?) THEN excluded.due"
        " ELSE jobs.due END,"
        f" attempts = CASE WHEN {fresh} THEN 0 ELSE jobs.attempts END,"
        f" queued_at = CASE WHEN {fresh} THEN excluded.queued_at ELSE jobs.queued_at END"
    )


def _enqueue_params(
    tenant: str, subject: str, reason: str, detail: str | None, force: bool
) -> tuple[Any, ...]:
    manual = reason == MANUAL
    return (
        tenant,
        subject,
        reason,
        detail,
        force,
        manual,
        manual,
        f"%,{reason},%",
        manual,
        manual,
        manual,
        manual,
        manual,
    )


def tail_threshold(tx: Tx, tenant: str) -> int:
    row = tx.one("SELECT tail_threshold FROM job_settings WHERE tenant = ?", (tenant,))
    return DEFAULT_TAIL_THRESHOLD if row is None else int(row[0])


def queue_after_append(tx: Tx, now: str, tenant: str, high_water: Mapping[str, int]) -> None:
    """The tail trigger, inside an append's transaction: the subjects whose tail grew past
    the threshold (``high_water``: each grown subject's new one) are queued, in its order.

    One read of the subjects' aliases and one upsert round for the batch.
    """
    covers: dict[str, int] = {}
    threshold = DEFAULT_TAIL_THRESHOLD
    for condition, params in tx.where_in("a.subject", list(high_water)):
        for subject, covers_through, setting in tx.all(
            "SELECT a.subject, a.covers_through, s.tail_threshold FROM aliases a"
            " LEFT JOIN job_settings s ON s.tenant = a.tenant"
            f" WHERE a.tenant = ? AND {condition}",
            (tenant, *params),
        ):
            covers[subject] = int(covers_through)
            threshold = DEFAULT_TAIL_THRESHOLD if setting is None else int(setting)
    queue_tails(tx, now, tenant, high_water, covers, threshold)


def queue_tails(
    tx: Tx,
    now: str,
    tenant: str,
    high_water: Mapping[str, int],
    covers: Mapping[str, int],
    threshold: int,
) -> None:
    """The tail trigger's decision on what was read under the locks: each subject's
    alias ``covers`` through, the tenant's ``threshold``; no read of its own."""
    if threshold <= 0:
        return
    rows = []
    for subject, high in high_water.items():
        tail = high - covers[subject]
        if tail > threshold:
            detail = f"tail of {tail} events > {threshold}"
            rows.append(_enqueue_params(tenant, subject, TAIL, detail, False))
    if rows:
        tx.executemany(_enqueue_sql(now), rows)


def queue_after_invalidation(
    tx: Tx,
    now: str,
    tenant: str,
    subject: str,
    detail: str,
    stale: Sequence[str],
    published: bool | None = None,
) -> None:
    """The staleness trigger, inside an invalidating operation's transaction.

    The operation advanced the epoch, so a published summary left recall (I4)
    at this commit; whatever it staled or outdated is rebuilt by a job queued
    in the same transaction. A subject never summarized needs no rebuild.
    ``published``: whether the alias publishes a summary, when read already.
    """
    if not stale:
        if published is None:
            row = tx.one(
                "SELECT artifact_id FROM aliases WHERE tenant = ? AND subject = ?",
                (tenant, subject),
            )
            published = row is not None and bool(row[0])
        if not published:
            return
    # No RETURNING: in a pipelined transaction the upsert waits for the commit's trip.
    tx.execute(_enqueue_sql(now), _enqueue_params(tenant, subject, STALE, detail, False))
