"""The job queue's transactions: triggers, claim, renew, finish (DESIGN "Job queue").

One row per ``(tenant, subject)``: every trigger is an upsert into it, so at
most one consolidation per subject is queued or running. A job transaction
touches the jobs rows only, so it takes no clock lock; a trigger fired by a
writer of the subject (an append, an invalidating operation) runs inside that
writer's transaction, after its lock (I7), and commits or rolls back with it.

Times are seconds since the Unix epoch read from the database's clock
(``now_sql``, supplied by the backend): workers on many machines share that
one clock, so a lease means the same to all of them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memlineage.store.core import StoreCore
from memlineage.store.protocol import Job, JobEnd
from memlineage.store.sql import Tx
from memlineage.store.triggers import JOB_COLUMNS, enqueue, job_from_row, tail_threshold

# The release state of a claimed job's tenant, as ``release_state`` reads it (no row: auto).
RELEASE_OF_JOB = (
    "(SELECT mode FROM release_state r WHERE r.tenant = jobs.tenant),"
    " (SELECT active_config FROM release_state r WHERE r.tenant = jobs.tenant)"
)


class JobsMixin(StoreCore):
    def enqueue(
        self, tenant: str, subject: str, reason: str, detail: str | None = None, force: bool = False
    ) -> Job:
        """A manual or scheduled trigger: one transaction on the jobs row only."""
        with self._write() as tx:
            return enqueue(tx, self.now_sql, tenant, subject, reason, detail, force)

    def claim(self, tenant: str | None, owner: str, lease: float, max_attempts: int) -> Job | None:
        """Take the runnable job that is due first: queued and due, or running with an
        expired lease (its worker died or hung). The token goes up by one, fencing the
        previous owner out. A job whose lease expired after its last allowed attempt is
        parked ``dead`` instead and returned so, for the caller to report.

        PostgreSQL skips rows other workers hold (``FOR UPDATE SKIP LOCKED``); on
        SQLite the statement runs inside ``BEGIN IMMEDIATE``, which excludes every
        other writer. One statement, its own transaction (one round trip); it also
        returns the tenant's release mode and active configuration (``Job.release``),
        which the job would otherwise read.
        """
        now = self.now_sql
        only_tenant = " AND tenant = ?" if tenant is not None else ""
        expired_last = "(state = 'running' AND attempts >= ?)"
        with self._one_statement() as tx:
            row = tx.one(
                f"UPDATE jobs SET state = CASE WHEN {expired_last} THEN 'dead' ELSE 'running' END,"
                f" last_error = CASE WHEN {expired_last}"
                " THEN 'lease expired during the last allowed attempt: the worker died or hung'"
                " ELSE last_error END,"
                f" last_outcome = CASE WHEN {expired_last} THEN 'lease_expired'"
                " ELSE last_outcome END,"
                f" token = token + 1, attempts = attempts + 1, lease_owner = ?, rerun = FALSE,"
                f" started_at = {now}, due = {now} + ?"
                " WHERE (tenant, subject) = (SELECT tenant, subject FROM jobs"
                f" WHERE state IN ('queued', 'running') AND due <= {now}{only_tenant}"
                f" ORDER BY due LIMIT 1{self.claim_lock})"
                f" RETURNING {JOB_COLUMNS}, {RELEASE_OF_JOB}",
                (
                    max_attempts,
                    max_attempts,
                    max_attempts,
                    owner,
                    lease,
                    *([tenant] if tenant is not None else []),
                ),
            )
        if not row:
            return None
        mode, active = row[-2:]
        return replace(job_from_row(row[:-2]), release=(mode or "auto", active))

    def renew(self, job: Job, lease: float) -> bool:
        """Extend the lease; False when another worker has claimed the job since."""
        tx: Tx
        with self._one_statement() as tx:
            return (
                tx.count(
                    f"UPDATE jobs SET due = {self.now_sql} + ?"
                    " WHERE tenant = ? AND subject = ? AND token = ? AND state = 'running'",
                    (lease, job.tenant, job.subject, job.token),
                )
                == 1
            )

    def finish(self, job: Job, end: JobEnd) -> bool:
        """End an attempt, fenced by its token; False when it no longer owns the job.

        A job triggered again while it ran (``rerun``) is queued again at once
        instead of ``done``, and a retry of it is due at once: it has new input.
        """
        now = self.now_sql
        tx: Tx
        with self._one_statement() as tx:
            return (
                tx.count(
                    "UPDATE jobs SET"
                    " state = CASE WHEN rerun AND ? = 'done' THEN 'queued' ELSE ? END,"
                    f" due = {now} + CASE WHEN rerun THEN 0 ELSE ? END,"
                    " attempts = attempts - ?, rerun = FALSE, lease_owner = NULL,"
                    f" finished_at = {now}, last_outcome = ?,"
                    " last_error = COALESCE(?, last_error),"
                    " last_artifact = COALESCE(?, last_artifact)"
                    " WHERE tenant = ? AND subject = ? AND token = ? AND state = 'running'",
                    (
                        end.state,
                        end.state,
                        end.delay,
                        0 if end.counted else 1,
                        end.outcome,
                        end.error,
                        end.artifact_id,
                        job.tenant,
                        job.subject,
                        job.token,
                    ),
                )
                == 1
            )

    def jobs(self, tenant: str, state: str | None = None) -> list[Job]:
        sql = f"SELECT {JOB_COLUMNS} FROM jobs WHERE tenant = ?"
        params: list[Any] = [tenant]
        if state is not None:
            sql += " AND state = ?"
            params.append(state)
        with self._read() as tx:
            return [job_from_row(r) for r in tx.all(sql + " ORDER BY due, subject", params)]

    def outdated_subjects(self, tenant: str) -> list[str]:
        """Subjects whose summary misses events or is no longer fresh (the schedule's sweep)."""
        with self._read() as tx:
            rows = tx.all(
                "SELECT c.subject FROM clocks c JOIN aliases a"
                " ON a.tenant = c.tenant AND a.subject = c.subject"
                " WHERE c.tenant = ? AND c.high_water > 0 AND (a.covers_through < c.high_water"
                " OR a.source_epoch <> c.epoch OR a.bypassed) ORDER BY c.subject",
                (tenant,),
            )
        return [r[0] for r in rows]

    def tail_threshold(self, tenant: str) -> int:
        with self._read() as tx:
            return tail_threshold(tx, tenant)

    def set_tail_threshold(self, tenant: str, threshold: int) -> None:
        with self._write() as tx:
            tx.execute(
                "INSERT INTO job_settings (tenant, tail_threshold) VALUES (?, ?)"
                " ON CONFLICT (tenant) DO UPDATE SET tail_threshold = excluded.tail_threshold",
                (tenant, threshold),
            )
