"""What every transaction of the store shares: connections, the lock (I7), the epoch.

A backend subclass (sqlite.py, postgres.py) supplies connections and the few
statements whose text differs; the transactions themselves live in one
module per concept of the design (schema, append, operations, switch), all
written once for both backends so SQLite and PostgreSQL cannot drift apart.
"""

from __future__ import annotations

import abc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from memlineage.errors import NotFound
from memlineage.model import Clock, Event, OpKind
from memlineage.raw.ingest import utc_now
from memlineage.raw.validity import DEFAULT_POLICY, SourceState, TrustPolicy, source_state
from memlineage.store.protocol import OpResult
from memlineage.store.reader import SqlReader
from memlineage.store.rows import dumps
from memlineage.store.search import TextSearch
from memlineage.store.sql import Statement, Tx
from memlineage.store.staleness import mark_descendants_stale
from memlineage.store.triggers import queue_after_invalidation

# An operation's fields: kind, target, other, conflict_id, key, trust, taint, reason.
OperationFields = tuple[
    OpKind, str, str | None, str | None, str | None, str | None, Sequence[str] | None, str | None
]


class StoreCore(abc.ABC):
    """The shared state and helpers of every transaction; see :class:`SqlStore`."""

    dialect: str  # the name of the migrations folder
    integrity_errors: tuple[type[Exception], ...] = ()  # the driver's unique violation
    # Run before the recursive descendants query, in its transaction (PostgreSQL: jit off).
    descendants_prelude: str | None = None
    # The database clock in seconds since the Unix epoch (the job queue's one clock).
    now_sql: str
    url: str
    policy: TrustPolicy = DEFAULT_POLICY
    text_search: TextSearch  # the backend's full-text lookup (store/search.py)
    # SQL that differs per backend: a claim's row lock (PostgreSQL: SKIP LOCKED).
    claim_lock: str = ""
    # A list of texts as rows of one column ``value``, from one parameter (``text_list``).
    text_rows: str = "json_each(?)"

    @staticmethod
    def text_list(values: Sequence[str]) -> Any:
        """``values`` as the one parameter of ``text_rows`` (SQLite: a JSON array)."""
        return dumps(list(values))

    # Rows of (seq, id, body) from ``event_texts_params`` (SQLite: one JSON array).
    event_texts_rows: str = (
        "(SELECT json_extract(value, '$[0]') AS seq, json_extract(value, '$[1]') AS id,"
        " json_extract(value, '$[2]') AS body FROM json_each(?)) AS listed"
    )

    @staticmethod
    def event_texts_params(rows: Sequence[tuple[int, str, str]]) -> tuple[Any, ...]:
        """``rows`` as the parameters of ``event_texts_rows``."""
        return (dumps([list(row) for row in rows]),)

    # -- what a backend supplies --

    @abc.abstractmethod
    def _write(self) -> Any:
        """Context manager: a write transaction (SQLite: BEGIN IMMEDIATE)."""

    @abc.abstractmethod
    def _read(self) -> Any:
        """Context manager: a read-only transaction over one snapshot."""

    def _pipelined_write(self) -> Any:
        """Context manager: a write transaction whose statements may go out together
        (PostgreSQL: a pipeline; one whose rows are not read waits for the next that
        is read). Read rows only through ``one``, ``all``, ``all_together``."""
        return self._write()

    def _pipelined_read(self) -> Any:
        """Context manager: ``_read`` whose statements may go out together (PostgreSQL:
        BEGIN leaves with the first statement, COMMIT after the last). Read rows only
        through ``one``, ``all``, ``all_together``."""
        return self._read()

    def _read_once(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """The rows of one statement, which reads one snapshot by itself (PostgreSQL and
        SQLite: no transaction of its own, so one statement and one round trip)."""
        with self._read() as tx:
            found: list[Any] = tx.all(sql, params)
        return found

    def _write_once(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """The rows of one statement that writes, as a transaction of its own
        (PostgreSQL: one round trip, without BEGIN and COMMIT)."""
        with self._write() as tx:
            found: list[Any] = tx.all(sql, params)
        return found

    def _one_statement(self, read_only: bool = False) -> Any:
        """Context manager: a transaction of exactly one statement, the caller's promise
        (PostgreSQL: the statement commits on its own, no BEGIN or COMMIT: one round
        trip instead of three; SQLite: as ``_write`` or ``_read``)."""
        return self._read() if read_only else self._write()

    def _read_together(self, statements: Sequence[Statement]) -> list[list[Any]]:
        """Every row of each of ``statements``, read over one snapshot (PostgreSQL: BEGIN,
        the statements and COMMIT in one round trip)."""
        with self._read() as tx:
            together: list[list[Any]] = tx.all_together(statements)
        return together

    @abc.abstractmethod
    def _lock_for_migration(self, tx: Tx) -> None: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    @abc.abstractmethod
    def _table_names(self, tx: Tx) -> set[str]:
        """The tables that memlineage's schema would be created among."""

    # -- reads --

    @contextmanager
    def reader(self, tenant: str, *, pipelined: bool = False) -> Iterator[SqlReader]:
        """A reader of one snapshot; ``pipelined``: in ``_pipelined_read`` (a recall: on
        PostgreSQL, one round trip fewer)."""
        with self._pipelined_read() if pipelined else self._read() as tx:
            yield SqlReader(tx, tenant, self.text_search, self.policy, scope=self)

    # -- the lock (I7) --

    def _lock_clock(self, tx: Tx, tenant: str, subject: str) -> Clock | None:
        """The first statement of every writer: take the subject's clock row lock."""
        row = tx.one(
            "UPDATE clocks SET switches = switches WHERE tenant = ? AND subject = ?"
            " RETURNING high_water, epoch",
            (tenant, subject),
        )
        return Clock(int(row[0]), int(row[1])) if row else None

    def _lock_or_create_clocks(
        self, tx: Tx, tenant: str, subjects: Sequence[str]
    ) -> dict[str, Clock]:
        """Like _lock_clock for each of ``subjects``, in their order, creating the clock
        and the empty alias of a new subject, and adopting the tenant's policies for it."""
        rows = tx.returning_many(
            "INSERT INTO clocks (tenant, subject) VALUES (?, ?)"
            " ON CONFLICT (tenant, subject) DO UPDATE SET switches = clocks.switches"
            " RETURNING high_water, epoch",
            [(tenant, s) for s in subjects],
        )
        clocks = {s: Clock(int(r[0]), int(r[1])) for s, r in zip(subjects, rows, strict=True)}
        self._start_subjects(tx, tenant, [s for s, c in clocks.items() if c.high_water == 0])
        return clocks

    def _start_subjects(self, tx: Tx, tenant: str, new: Sequence[str]) -> None:
        """The alias and the tenant's policies of each subject whose clock was just locked
        with ``high_water`` 0. A clock is created with its alias and never removed: a
        subject that has appended before (high_water > 0) has its alias already."""
        if new:
            tx.executemany(
                "INSERT INTO aliases (tenant, subject) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(tenant, s) for s in new],
            )
            self._on_new_subjects(tx, tenant, new)  # validity: tenant policies

    def _on_new_subjects(self, tx: Tx, tenant: str, subjects: Sequence[str]) -> None:
        """Hook: the first append of ``subjects``, under their locks (policies.py adopts
        the tenant's policy)."""
        return None

    def _resolved_by_policy(self, tx: Tx, tenant: str, subject: str, conflict_id: str) -> bool:
        """Hook: whether the temporal policy made the conflict's resolution (detect.py)."""
        return False

    def _catch_up_detection(self, tx: Tx, tenant: str, subject: str, high_water: int) -> bool:
        """Hook: under the subject's lock, run its detection job if events are unchecked
        (detect.py); True when it ran."""
        return False

    def _bump_epoch(self, tx: Tx, tenant: str, subject: str) -> tuple[int, int]:
        """Advance the epoch and the operation counter; returns (epoch, op_seq)."""
        row = tx.one(
            "UPDATE clocks SET epoch = epoch + 1, ops = ops + 1"
            " WHERE tenant = ? AND subject = ? RETURNING epoch, ops",
            (tenant, subject),
        )
        return int(row[0]), int(row[1])

    def _subject_of(self, tenant: str, event_id: str, field: str = "id") -> str:
        """The subject of an event. Read before the lock: an event's subject never changes."""
        with self._read() as tx:
            row = tx.one(
                "SELECT subject FROM events WHERE tenant = ? AND id = ?", (tenant, event_id)
            )
        if row is None:
            raise NotFound(f"no event {event_id!r} in tenant {tenant!r}", field=field)
        return str(row[0])

    def _conflict_sides(self, tenant: str, conflict_id: str) -> tuple[str, str, str]:
        """(subject, a, b) of a declared or detected conflict. Read before the lock: a
        conflict's subject and sides never change."""
        with self._read() as tx:
            row = tx.one(
                "SELECT subject, target, other FROM operations"
                " WHERE tenant = ? AND conflict_id = ? AND kind = 'conflict'",
                (tenant, conflict_id),
            )
        if row is None:
            raise NotFound(f"no conflict {conflict_id!r} in tenant {tenant!r}", field="conflict")
        return str(row[0]), str(row[1]), str(row[2])

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
        operation = (kind, target, other, conflict_id, key, trust, taint, reason)
        self._insert_operation(tx, tenant, subject, op_seq, epoch, operation)
        stale: tuple[str, ...] = ()
        if invalidates is not None:
            stale = self._mark_descendants_stale(
                tx, tenant, subject, [invalidates], f"{kind} of {invalidates}"
            )
        queue_after_invalidation(tx, self.now_sql, tenant, subject, f"{kind} of {target}", stale)
        return OpResult(subject, epoch, True, conflict_id=conflict_id, stale=stale)

    def _insert_operation(
        self, tx: Tx, tenant: str, subject: str, op_seq: int, epoch: int, operation: OperationFields
    ) -> None:
        """The row of an operation the caller numbered (``op_seq``, ``epoch``) under the lock."""
        kind, target, other, conflict_id, key, trust, taint, reason = operation
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

    def _mark_descendants_stale(
        self, tx: Tx, tenant: str, subject: str, roots: Sequence[str], reason: str
    ) -> tuple[str, ...]:
        return mark_descendants_stale(tx, tenant, subject, roots, reason, self.descendants_prelude)
