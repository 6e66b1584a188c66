"""The transactions, written once for both backends.

Each backend supplies connections and the few statements whose text differs;
the locking protocol (I7) and the validation of the switch live here, so
SQLite and PostgreSQL cannot drift apart.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import Any

from ..canonical import input_root
from ..errors import BadInput, DuplicateEventId, NotFound, SchemaTooNew
from ..ingest import utc_now
from ..model import (
    Artifact,
    ArtifactStatus,
    Clock,
    Event,
    NewEvent,
    OpKind,
    SwitchFailure,
    SwitchResult,
)
from ..select import DEFAULT_POLICY, SourceState, TrustPolicy, source_state
from .protocol import Appended, OpResult
from .reader import SqlReader
from .rows import ARTIFACT_COLUMNS, EVENT_COLUMNS, dumps, event_row
from .sql import Tx, chunks, marks

# Artifacts that a newly invalidated source takes out of use; rejected and
# failed ones were never usable and keep the status that says why.
STALEABLE = ("candidate", "published", "superseded")


# --- the store ------------------------------------------------------------------


class SqlStore(abc.ABC):
    """Every transaction of memlineage; a backend subclass supplies connections."""

    dialect: str  # the name of the migrations folder
    integrity_errors: tuple[type[Exception], ...] = ()  # the driver's unique violation
    # Run before the recursive descendants query, in its transaction (PostgreSQL: jit off).
    descendants_prelude: str | None = None
    url: str
    policy: TrustPolicy = DEFAULT_POLICY

    # -- what a backend supplies --

    @abc.abstractmethod
    def _write(self) -> Any:
        """Context manager: a write transaction (SQLite: BEGIN IMMEDIATE)."""

    @abc.abstractmethod
    def _read(self) -> Any:
        """Context manager: a read-only transaction over one snapshot."""

    @abc.abstractmethod
    def _lock_for_migration(self, tx: Tx) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    # -- schema --

    def migrations(self) -> list[tuple[int, str]]:
        folder = resources.files("memlineage.store").joinpath("migrations", self.dialect)
        found = []
        for entry in folder.iterdir():
            if entry.name.endswith(".sql"):
                found.append((int(entry.name.split("_", 1)[0]), entry.read_text("utf-8")))
        return sorted(found)

    def migrate(self) -> int:
        """Apply missing migrations; refuse a schema newer than this code knows.

        A current schema is confirmed by a read, so opening a store never waits
        for the write lock of another process's transaction.
        """
        known = self.migrations()
        latest = known[-1][0]
        with self._read() as tx:
            current = self._schema_version(tx)
        if current < latest:
            with self._write() as tx:
                self._lock_for_migration(tx)
                tx.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations"
                    " (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
                )
                current = self._schema_version(tx)  # another process may have migrated
                for version, script in known:
                    if version > current:
                        self._run_script(tx, script)
                        tx.execute(
                            "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                            (version, utc_now()),
                        )
        if current > latest:
            raise SchemaTooNew(
                f"database schema is version {current}, this memlineage knows up to"
                f" {latest}: upgrade memlineage to open {self.url}"
            )
        return latest

    def _schema_version(self, tx: Tx) -> int:
        if not self._has_table(tx, "schema_migrations"):
            return 0
        row = tx.one("SELECT MAX(version) FROM schema_migrations")
        return int(row[0]) if row and row[0] is not None else 0

    @abc.abstractmethod
    def _has_table(self, tx: Tx, name: str) -> bool: ...

    def _run_script(self, tx: Tx, script: str) -> None:
        for statement in _split_sql(script):
            tx.execute(statement)

    # -- reads --

    @contextmanager
    def reader(self, tenant: str) -> Iterator[SqlReader]:
        with self._read() as tx:
            yield SqlReader(tx, tenant)

    # -- the lock (I7) --

    def _lock_clock(self, tx: Tx, tenant: str, subject: str) -> Clock | None:
        """The first statement of every writer: take the subject's clock row lock."""
        row = tx.one(
            "UPDATE clocks SET switches = switches WHERE tenant = ? AND subject = ?"
            " RETURNING high_water, epoch",
            (tenant, subject),
        )
        return Clock(int(row[0]), int(row[1])) if row else None

    def _lock_or_create_clock(self, tx: Tx, tenant: str, subject: str) -> Clock:
        """Like _lock_clock, creating the clock and the empty alias of a new subject."""
        row = tx.one(
            "INSERT INTO clocks (tenant, subject) VALUES (?, ?)"
            " ON CONFLICT (tenant, subject) DO UPDATE SET switches = clocks.switches"
            " RETURNING high_water, epoch",
            (tenant, subject),
        )
        tx.execute(
            "INSERT INTO aliases (tenant, subject) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (tenant, subject),
        )
        return Clock(int(row[0]), int(row[1]))

    def _bump_epoch(self, tx: Tx, tenant: str, subject: str) -> tuple[int, int]:
        """Advance the epoch and the operation counter; returns (epoch, op_seq)."""
        row = tx.one(
            "UPDATE clocks SET epoch = epoch + 1, ops = ops + 1"
            " WHERE tenant = ? AND subject = ? RETURNING epoch, ops",
            (tenant, subject),
        )
        return int(row[0]), int(row[1])

    # -- append (I1, I2) --

    def append(self, tenant: str, events: Sequence[NewEvent]) -> list[Appended]:
        """Append events, one transaction per subject, in input order.

        Every id is checked against the store before anything is written, so a
        conflicting duplicate in a batch leaves every subject untouched.
        """
        by_subject: dict[str, list[NewEvent]] = {}
        for event in events:
            by_subject.setdefault(event.subject, []).append(event)
        self._check_batch(events)
        if len(by_subject) > 1:  # one subject: its own transaction checks before writing
            self._check_stored(tenant, events)
        results: dict[int, Appended] = {}
        for subject, batch in by_subject.items():
            try:
                appended = self._append_subject(tenant, subject, batch)
            except self.integrity_errors:
                # Ids are unique per tenant, but the lock is per subject: the same id
                # raced in from another subject. Once more under the lock, the stored
                # event is seen and the retry is either a no-op or DuplicateEventId.
                appended = self._append_subject(tenant, subject, batch)
            for event, result in zip(batch, appended, strict=True):
                results[id(event)] = result
        return [results[id(e)] for e in events]

    @staticmethod
    def _check_batch(events: Sequence[NewEvent]) -> None:
        seen: dict[str, str] = {}
        for event in events:
            if seen.setdefault(event.id, event.content_hash) != event.content_hash:
                raise DuplicateEventId(
                    f"event {event.id!r} appears twice in the batch with different content",
                    field="id",
                )

    def _check_stored(self, tenant: str, events: Sequence[NewEvent]) -> None:
        hashes = {e.id: e.content_hash for e in events}
        with self._read() as tx:
            stored = self._stored_hashes(tx, tenant, list(hashes))
        for event_id, (_subject, stored_hash, _seq) in stored.items():
            if stored_hash != hashes[event_id]:
                raise DuplicateEventId(
                    f"event {event_id!r} exists with different content; ids are immutable",
                    field="id",
                )

    def _stored_hashes(
        self, tx: Tx, tenant: str, ids: Sequence[str]
    ) -> dict[str, tuple[str, str, int]]:
        found: dict[str, tuple[str, str, int]] = {}
        for chunk in chunks(ids):
            for event_id, subject, hash_, seq in tx.all(
                "SELECT id, subject, hash, seq FROM events"
                f" WHERE tenant = ? AND id IN ({marks(len(chunk))})",
                (tenant, *chunk),
            ):
                found[event_id] = (subject, hash_, int(seq))
        return found

    def _append_subject(
        self, tenant: str, subject: str, batch: Sequence[NewEvent]
    ) -> list[Appended]:
        with self._write() as tx:
            clock = self._lock_or_create_clock(tx, tenant, subject)
            stored = self._stored_hashes(tx, tenant, [e.id for e in batch])
            out: list[Appended] = []
            rows: list[tuple[Any, ...]] = []
            replaced: list[tuple[str, str]] = []
            seq = clock.high_water
            now = utc_now()
            for event in batch:
                hash_ = event.content_hash
                if event.id in stored:
                    # I2: the same id with the same hash is an idempotent retry.
                    stored_subject, stored_hash, stored_seq = stored[event.id]
                    if stored_hash != hash_:
                        raise DuplicateEventId(
                            f"event {event.id!r} exists with different content", field="id"
                        )
                    out.append(Appended(event.id, stored_subject, stored_seq, created=False))
                    continue
                seq += 1
                stored[event.id] = (subject, hash_, seq)
                rows.append(event_row(tenant, event, seq, hash_, now))
                if event.supersedes is not None:
                    replaced.append((event.supersedes, event.id))
                out.append(Appended(event.id, subject, seq, created=True))
            if replaced:
                self._check_targets(tx, tenant, subject, [old for old, _ in replaced], stored)
            tx.executemany(
                f"INSERT INTO events (tenant, {EVENT_COLUMNS}) VALUES (?, {marks(13)})",
                rows,
            )
            if seq != clock.high_water:
                tx.execute(
                    "UPDATE clocks SET high_water = ? WHERE tenant = ? AND subject = ?",
                    (seq, tenant, subject),
                )
            for old, new in replaced:
                self._record_invalidation(
                    tx, tenant, subject, OpKind.REPLACE, old, other=new, invalidates=old
                )
            return out

    def _check_targets(
        self,
        tx: Tx,
        tenant: str,
        subject: str,
        targets: Sequence[str],
        known: dict[str, tuple[str, str, int]],
    ) -> None:
        known.update(self._stored_hashes(tx, tenant, [t for t in targets if t not in known]))
        for target in targets:
            if target not in known:
                raise NotFound(f"superseded event {target!r} does not exist", field="supersedes")
            if known[target][0] != subject:
                raise BadInput(
                    f"event {target!r} belongs to another subject; a replacement stays"
                    " in its subject",
                    field="supersedes",
                )

    # -- invalidating operations (I1, I7, staleness) --

    def _subject_of(self, tenant: str, event_id: str, field: str = "id") -> str:
        """The subject of an event. Read before the lock: an event's subject never changes."""
        with self._read() as tx:
            row = tx.one(
                "SELECT subject FROM events WHERE tenant = ? AND id = ?", (tenant, event_id)
            )
        if row is None:
            raise NotFound(f"no event {event_id!r} in tenant {tenant!r}", field=field)
        return str(row[0])

    def _state(self, tx: Tx, tenant: str, subject: str, ids: Sequence[str]) -> SourceState:
        """The raw layer's verdict on the events ``ids`` of one subject, read under the lock."""
        return self._events_and_state(tx, tenant, subject, ids)[1]

    def _events_and_state(
        self, tx: Tx, tenant: str, subject: str, ids: Sequence[str]
    ) -> tuple[dict[str, Event], SourceState]:
        reader = SqlReader(tx, tenant)
        events = {e.id: e for e in reader.events_by_id(subject, ids)}
        return events, source_state(events.values(), reader.operations(subject), self.policy)

    def _record_invalidation(
        self,
        tx: Tx,
        tenant: str,
        subject: str,
        kind: OpKind,
        target: str,
        *,
        other: str | None = None,
        conflict_id: str | None = None,
        key: str | None = None,
        trust: str | None = None,
        taint: Sequence[str] | None = None,
        reason: str | None = None,
        invalidates: str | None = None,
    ) -> OpResult:
        """Bump the epoch, record the operation, stale what derives from a now-invalid event."""
        epoch, op_seq = self._bump_epoch(tx, tenant, subject)
        if kind is OpKind.CONFLICT:
            conflict_id = f"conflict:{subject}:{op_seq:06d}"
        tx.execute(
            "INSERT INTO operations (tenant, subject, op_seq, kind, target, other, conflict_id,"
            " key, trust, taint, reason, epoch, recorded_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                tenant,
                subject,
                op_seq,
                str(kind),
                target,
                other,
                conflict_id,
                key,
                trust,
                dumps(list(taint)) if taint is not None else None,
                reason,
                epoch,
                utc_now(),
            ),
        )
        stale: tuple[str, ...] = ()
        if invalidates is not None:
            stale = self._mark_descendants_stale(
                tx, tenant, subject, [invalidates], f"{kind} of {invalidates}"
            )
        return OpResult(subject, epoch, True, conflict_id=conflict_id, stale=stale)

    def _mark_descendants_stale(
        self, tx: Tx, tenant: str, subject: str, roots: Sequence[str], reason: str
    ) -> tuple[str, ...]:
        """Every artifact reachable from ``roots`` along derivation edges becomes stale.

        UNION (not UNION ALL) visits each node once however many paths reach it,
        so the cost follows the number of descendants, not the paths.
        """
        if self.descendants_prelude:
            tx.execute(self.descendants_prelude)
        rows = tx.all(
            "WITH RECURSIVE below(node) AS ("
            f" SELECT child FROM derivation WHERE tenant = ? AND subject = ?"
            f" AND parent IN ({marks(len(roots))})"
            " UNION"
            " SELECT d.child FROM derivation d JOIN below b ON d.parent = b.node"
            " WHERE d.tenant = ? AND d.subject = ?)"
            " UPDATE artifacts SET status = 'stale', reason = ?, status_at = ?"
            " WHERE tenant = ? AND subject = ? AND id IN (SELECT node FROM below)"
            f" AND status IN ({marks(len(STALEABLE))}) RETURNING id",
            (
                tenant,
                subject,
                *roots,
                tenant,
                subject,
                reason,
                utc_now(),
                tenant,
                subject,
                *STALEABLE,
            ),
        )
        return tuple(sorted(r[0] for r in rows))

    def revoke(self, tenant: str, event_id: str, reason: str | None = None) -> OpResult:
        """Undo an event (I1: advances the epoch); what derives from it goes stale at once."""
        subject = self._subject_of(tenant, event_id)
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            assert clock is not None  # the event exists, so its clock does
            state = self._state(tx, tenant, subject, [event_id])
            if state.invalid.get(event_id) == "revoked":
                return OpResult(subject, clock.epoch, changed=False)
            return self._record_invalidation(
                tx, tenant, subject, OpKind.REVOKE, event_id, reason=reason, invalidates=event_id
            )

    def set_trust(
        self, tenant: str, event_id: str, level: str | None, taint: Sequence[str] | None
    ) -> OpResult:
        """Change an event's trust level and/or taint labels (I1: advances the epoch)."""
        subject = self._subject_of(tenant, event_id)
        with self._write() as tx:
            self._lock_clock(tx, tenant, subject)
            was_valid = event_id not in self._state(tx, tenant, subject, [event_id]).invalid
            result = self._record_invalidation(
                tx,
                tenant,
                subject,
                OpKind.TRUST,
                event_id,
                trust=level,
                taint=sorted(set(taint)) if taint is not None else None,
            )
            now_invalid = event_id in self._state(tx, tenant, subject, [event_id]).invalid
            if was_valid and now_invalid:
                stale = self._mark_descendants_stale(
                    tx, tenant, subject, [event_id], f"trust change of {event_id}"
                )
                return OpResult(subject, result.epoch, True, stale=stale)
            return result

    def declare_conflict(self, tenant: str, a: str, b: str, key: str | None = None) -> OpResult:
        """Record that two events of one subject contradict each other (advances the epoch)."""
        if a == b:
            raise BadInput("an event cannot conflict with itself", field="b")
        subject = self._subject_of(tenant, a, field="a")
        if self._subject_of(tenant, b, field="b") != subject:
            raise BadInput("conflicting events must belong to one subject", field="b")
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            assert clock is not None
            for open_conflict in self._state(tx, tenant, subject, [a, b]).unresolved:
                if {open_conflict.a, open_conflict.b} == {a, b}:  # declaring again: a no-op
                    return OpResult(subject, clock.epoch, False, conflict_id=open_conflict.id)
            return self._record_invalidation(
                tx, tenant, subject, OpKind.CONFLICT, a, other=b, key=key
            )

    def resolve_conflict(self, tenant: str, conflict_id: str, winner: str) -> OpResult:
        """Resolve a conflict for ``winner``; the other side becomes invalid (I3)."""
        with self._read() as tx:
            row = tx.one(
                "SELECT subject, target, other FROM operations"
                " WHERE tenant = ? AND conflict_id = ? AND kind = 'conflict'",
                (tenant, conflict_id),
            )
        if row is None:
            raise NotFound(f"no conflict {conflict_id!r} in tenant {tenant!r}", field="conflict")
        subject, a, b = row
        if winner not in (a, b):
            raise BadInput(f"winner must be {a!r} or {b!r}", field="winner")
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            assert clock is not None
            conflict = self._state(tx, tenant, subject, [a, b]).conflicts[conflict_id]
            if conflict.resolved:
                if conflict.winner == winner:
                    return OpResult(subject, clock.epoch, changed=False, conflict_id=conflict_id)
                raise BadInput(
                    f"conflict {conflict_id!r} was resolved for {conflict.winner!r} already",
                    field="winner",
                )
            loser = b if winner == a else a
            return self._record_invalidation(
                tx,
                tenant,
                subject,
                OpKind.RESOLVE,
                loser,
                other=winner,
                conflict_id=conflict_id,
                invalidates=loser,
            )

    # -- derived layer --

    def write_artifact(self, tenant: str, artifact: Artifact) -> None:
        """Step 7: store an attempt with its manifest and derivation edges. Not readable yet."""
        manifest = artifact.manifest
        with self._write() as tx:
            if self._lock_clock(tx, tenant, artifact.subject) is None:
                raise NotFound(f"no subject {artifact.subject!r}", field="subject")
            now = utc_now()
            tx.execute(
                f"INSERT INTO artifacts (tenant, {ARTIFACT_COLUMNS}, status_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    tenant,
                    artifact.id,
                    artifact.subject,
                    str(artifact.status),
                    artifact.reason,
                    dumps(manifest.to_json()),
                    dumps(artifact.output.to_json()) if artifact.output else None,
                    dumps(artifact.gate.to_json()),
                    now,
                    now,
                ),
            )
            parents = list(manifest.input_ids)
            if manifest.derived_from_artifact:
                parents.append(manifest.derived_from_artifact)
            tx.executemany(
                "INSERT INTO derivation (tenant, subject, parent, child) VALUES (?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [(tenant, artifact.subject, parent, artifact.id) for parent in parents],
            )

    def switch(self, tenant: str, artifact_id: str) -> SwitchResult:
        """Step 8: publish a candidate through the three-way CAS on the alias, or say why not."""
        with self._read() as tx:
            row = tx.one(
                "SELECT subject FROM artifacts WHERE tenant = ? AND id = ?", (tenant, artifact_id)
            )
        if row is None:
            raise NotFound(f"no artifact {artifact_id!r}", field="artifact")
        subject = str(row[0])
        with self._write() as tx:
            switch_no = tx.one(
                "UPDATE clocks SET switches = switches + 1 WHERE tenant = ? AND subject = ?"
                " RETURNING epoch, switches",
                (tenant, subject),
            )
            epoch, switch_no = int(switch_no[0]), int(switch_no[1])
            artifact = SqlReader(tx, tenant).artifact(artifact_id, subject)
            assert artifact is not None
            refusal = self._refusal(tx, tenant, artifact, epoch)
            if refusal is None:
                refusal = self._compare_and_swap(tx, tenant, artifact)
            alias = SqlReader(tx, tenant).alias(subject)
            if refusal is not None:
                reason, detail = refusal
                if artifact.status is ArtifactStatus.CANDIDATE:
                    self._set_status(
                        tx, tenant, artifact, ArtifactStatus.FAILED, f"{reason}: {detail}"
                    )
                return SwitchResult(False, artifact_id, reason, detail, alias)
            previous = artifact.manifest.expected_alias.artifact_id
            tx.execute(
                "UPDATE artifacts SET status = 'superseded', status_at = ?"
                " WHERE tenant = ? AND subject = ? AND id = ? AND status = 'published'",
                (utc_now(), tenant, subject, previous),
            )
            self._set_status(tx, tenant, artifact, ArtifactStatus.PUBLISHED, None)
            tx.execute(
                "INSERT INTO alias_history (tenant, subject, switch_no, artifact_id, source_epoch,"
                " covers_through, switched_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    tenant,
                    subject,
                    switch_no,
                    artifact_id,
                    alias.source_epoch,
                    alias.covers_through,
                    utc_now(),
                ),
            )
            return SwitchResult(True, artifact_id, None, "", alias)

    def _refusal(
        self, tx: Tx, tenant: str, artifact: Artifact, epoch: int
    ) -> tuple[SwitchFailure, str] | None:
        """Re-validate under the lock: status, epoch, every input, the conflict set."""
        manifest = artifact.manifest
        if artifact.status not in (ArtifactStatus.CANDIDATE, ArtifactStatus.STALE):
            return SwitchFailure.NOT_A_CANDIDATE, f"artifact is {artifact.status}"
        if epoch != manifest.input_epoch:
            return SwitchFailure.EPOCH_CHANGED, (
                f"epoch is {epoch}, inputs were read at {manifest.input_epoch}"
            )
        if artifact.status is ArtifactStatus.STALE:
            return SwitchFailure.INPUT_INVALIDATED, f"artifact went stale: {artifact.reason}"
        subject = artifact.subject
        events, state = self._events_and_state(tx, tenant, subject, manifest.input_ids)
        for input_id in manifest.input_ids:
            if input_id not in events or input_id in state.invalid:
                why = state.invalid.get(input_id, "missing")
                return SwitchFailure.INPUT_INVALIDATED, f"input {input_id} is {why}"
        # The manifest's inputRoot fixes every input hash; recompute it from what is stored.
        if input_root((e.id, e.hash) for e in events.values()) != manifest.input_root:
            return SwitchFailure.INPUT_INVALIDATED, "an input's hash differs from the manifest's"
        unresolved = sorted(c.id for c in state.unresolved if c.a in events and c.b in events)
        if unresolved != sorted(manifest.expected_conflicts):
            return SwitchFailure.NEW_CONFLICT, f"unresolved conflicts are now {unresolved}"
        return None

    def _compare_and_swap(
        self, tx: Tx, tenant: str, artifact: Artifact
    ) -> tuple[SwitchFailure, str] | None:
        """The seed's CAS on all three of parent, epoch and coverage, coverage monotone (I6)."""
        m = artifact.manifest
        expected = m.expected_alias
        swapped = tx.count(
            "UPDATE aliases SET artifact_id = ?, source_epoch = ?, covers_through = ?,"
            " bypassed = ? WHERE tenant = ? AND subject = ? AND artifact_id = ?"
            " AND source_epoch = ? AND covers_through = ? AND ? >= covers_through",
            (
                artifact.id,
                m.input_epoch,
                m.new_covers_through,
                False,
                tenant,
                artifact.subject,
                expected.artifact_id,
                expected.source_epoch,
                expected.covers_through,
                m.new_covers_through,
            ),
        )
        if swapped == 1:
            return None
        current = SqlReader(tx, tenant).alias(artifact.subject)
        if (current.artifact_id, current.source_epoch, current.covers_through) != (
            expected.artifact_id,
            expected.source_epoch,
            expected.covers_through,
        ):
            return SwitchFailure.ALIAS_MOVED, (
                f"alias is ({current.artifact_id or '-'}, {current.source_epoch},"
                f" {current.covers_through}), expected ({expected.artifact_id or '-'},"
                f" {expected.source_epoch}, {expected.covers_through})"
            )
        return SwitchFailure.COVERAGE_REGRESSION, (
            f"covers_through {current.covers_through} > {m.new_covers_through}"
        )

    @staticmethod
    def _set_status(
        tx: Tx, tenant: str, artifact: Artifact, status: ArtifactStatus, reason: str | None
    ) -> None:
        tx.execute(
            "UPDATE artifacts SET status = ?, reason = ?, status_at = ?"
            " WHERE tenant = ? AND subject = ? AND id = ?",
            (str(status), reason, utc_now(), tenant, artifact.subject, artifact.id),
        )


def _split_sql(script: str) -> list[str]:
    """Statements of a migration file (no semicolons inside statements in our files)."""
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
