"""What audit, lineage and ``why`` read (one snapshot of one subject), and the sweep.

The sweep marks ``failed`` the candidates a crashed run left behind. It is safe
at any time: by default it fails only candidates the switch would refuse anyway
(their epoch or their expected alias moved on), each under its subject's clock
lock (I7); ``older_than`` also fails candidates older than that many seconds.
It also catches the detection job up on subjects an append left unchecked.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from memlineage.errors import NotFound
from memlineage.model import Alias, Artifact, Clock
from memlineage.raw.ingest import utc_now
from memlineage.store.detect import DetectionMixin
from memlineage.store.protocol import (
    AliasSwitch,
    ErasureRecord,
    StatusChange,
    SubjectHistory,
    Swept,
)
from memlineage.store.reader import SqlReader
from memlineage.store.sql import Tx


class HistoryMixin(DetectionMixin):
    def subject_history(self, tenant: str, subject: str) -> SubjectHistory:
        with self._read() as tx:
            return self._history(tx, tenant, subject)

    def artifact_history(self, tenant: str, artifact_id: str) -> SubjectHistory:
        """The history of the subject an artifact belongs to."""
        with self._read() as tx:
            row = tx.one(
                "SELECT subject FROM artifacts WHERE tenant = ? AND id = ?", (tenant, artifact_id)
            )
            if row is None:
                raise NotFound(f"no artifact {artifact_id!r}", field="artifact")
            return self._history(tx, tenant, str(row[0]))

    def _history(self, tx: Tx, tenant: str, subject: str) -> SubjectHistory:
        reader = SqlReader(tx, tenant)
        head = reader.head(subject)
        if head is None:
            raise NotFound(f"no subject {subject!r}", field="subject")
        key = (tenant, subject)
        switches = tuple(
            AliasSwitch(int(r[0]), r[1], int(r[2]), int(r[3]), r[4])
            for r in tx.all(
                "SELECT switch_no, artifact_id, source_epoch, covers_through, switched_at"
                " FROM alias_history WHERE tenant = ? AND subject = ? ORDER BY switch_no",
                key,
            )
        )
        erasures = tuple(
            ErasureRecord(r[0], int(r[1]), r[2], r[3], r[4])
            for r in tx.all(
                "SELECT event_id, op_seq, erased_by, reason, erased_at FROM erasures"
                " WHERE tenant = ? AND subject = ? ORDER BY op_seq",
                key,
            )
        )
        edges = tuple(
            (r[0], r[1])
            for r in tx.all(
                "SELECT parent, child FROM derivation WHERE tenant = ? AND subject = ?"
                " ORDER BY child, parent",
                key,
            )
        )
        artifacts = tuple(reader.artifacts(subject))
        status_at = dict(
            tx.all(
                "SELECT id, status_at FROM artifact_status WHERE tenant = ? AND subject = ?", key
            )
        )
        return SubjectHistory(
            subject,
            head.clock,
            head.alias,
            tuple(reader.events(subject)),
            tuple(reader.operations(subject)),
            artifacts,
            {a.id: status_history(a, status_at[a.id], switches) for a in artifacts},
            switches,
            erasures,
            edges,
            _erased_with(tx, "event_vectors", key),
            _erased_with(tx, "event_items", key),
        )

    # -- the sweep --

    def sweep(self, tenant: str, older_than: float | None = None) -> list[Swept]:
        """Fail orphaned candidates and catch detection up; safe to run at any time."""
        for subject in self.pending_detection(tenant):
            self.detect_conflicts(tenant, subject)
        with self._read() as tx:
            subjects = [
                r[0]
                for r in tx.all(
                    "SELECT DISTINCT subject FROM artifact_status WHERE tenant = ?"
                    " AND status = 'candidate' ORDER BY subject",
                    (tenant,),
                )
            ]
        swept: list[Swept] = []
        for subject in subjects:
            swept += self._sweep_subject(tenant, subject, older_than)
        return swept

    def _sweep_subject(self, tenant: str, subject: str, older_than: float | None) -> list[Swept]:
        cutoff = None
        if older_than is not None:
            cutoff = datetime.now(UTC) - timedelta(seconds=older_than)
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            assert clock is not None
            reader = SqlReader(tx, tenant)
            alias = reader.alias(subject)
            out: list[Swept] = []
            for artifact in reader.artifacts(subject):
                if artifact.status != "candidate":
                    continue
                reason = _orphaned(artifact, clock, alias, cutoff)
                if reason is None:
                    continue
                tx.execute(
                    "UPDATE artifact_status SET status = 'failed', reason = ?, status_at = ?"
                    " WHERE tenant = ? AND subject = ? AND id = ? AND status = 'candidate'",
                    (reason, utc_now(), tenant, subject, artifact.id),
                )
                out.append(Swept(subject, artifact.id, reason))
            return out


def status_history(
    artifact: Artifact, status_at: str, switches: Sequence[AliasSwitch]
) -> tuple[StatusChange, ...]:
    """Every status the artifact took, derived from what the store keeps anyway.

    Statuses only move forward (candidate -> published -> superseded -> stale,
    or candidate -> failed / stale; rejected and failed are final), so the
    artifact row (its latest status, reason and time) and the alias history
    (when it was switched in, and out) say it all, without a write per change.
    """
    status = str(artifact.status)
    if not artifact.gate.passed:  # rejected, or failed in generation: never a candidate
        return (StatusChange(status, artifact.reason, artifact.created_at),)
    changes = [StatusChange("candidate", None, artifact.created_at)]
    switched = [i for i, s in enumerate(switches) if s.artifact_id == artifact.id]
    if switched:
        at = switched[0]
        changes.append(StatusChange("published", None, switches[at].switched_at))
        replaced = switches[at + 1].switched_at if at + 1 < len(switches) else None
        # A switch supersedes only a published artifact: one that went stale first stays so.
        if replaced and (status == "superseded" or _at(status_at) >= _at(replaced)):
            changes.append(StatusChange("superseded", None, replaced))
    if status not in ("candidate", "published", "superseded"):
        changes.append(StatusChange(status, artifact.reason, status_at))
    return tuple(changes)


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def _orphaned(
    artifact: Artifact, clock: Clock, alias: Alias, cutoff: datetime | None
) -> str | None:
    """Why a candidate can no longer be published (None: it still may be)."""
    manifest = artifact.manifest
    expected = manifest.expected_alias
    if manifest.input_epoch != clock.epoch:
        return f"orphaned: epoch is {clock.epoch}, inputs were read at {manifest.input_epoch}"
    if (alias.artifact_id, alias.source_epoch, alias.covers_through) != (
        expected.artifact_id,
        expected.source_epoch,
        expected.covers_through,
    ):
        return "orphaned: the alias moved on since the candidate was written"
    if cutoff is not None and datetime.fromisoformat(artifact.created_at) < cutoff:
        return f"orphaned: candidate written at {artifact.created_at} was never switched"
    return None


def _erased_with(tx: Tx, table: str, key: tuple[str, str]) -> tuple[str, ...]:
    """The erased events of a subject that still have a row in ``table`` (a copy of
    their text, or derived from it: none should, an erasure deletes it)."""
    rows = tx.all(
        "SELECT x.event_id FROM erasures x JOIN events e ON e.tenant = x.tenant"
        f" AND e.subject = x.subject AND e.id = x.event_id JOIN {table} v"
        " ON v.tenant = e.tenant AND v.subject = e.subject AND v.seq = e.seq"
        " WHERE x.tenant = ? AND x.subject = ? ORDER BY x.event_id",
        key,
    )
    return tuple(str(r[0]) for r in rows)
