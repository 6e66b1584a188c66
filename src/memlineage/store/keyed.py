"""The versions of one keyed value: events whose ids share a prefix (the LangGraph store).

A key's value is a chain of events ``<prefix><version>``, each superseding the
one before (interfaces/langgraph.py). Reading one key must not cost the whole
subject: the versions come from one range of the ``(tenant, id)`` index, and
the verdict on the latest from the operations that name a version (index
lookups per version) and the subject's policy operations (a partial index,
migration 0012).

A read is one statement (no transaction of its own: one statement reads one
snapshot). A write (``write_key``) is one transaction under the subject's clock
lock (I7): the lock and the key's read go out together, then the new version,
the replacement or revocation of the old one (PostgreSQL: as one statement of
WITH parts, ``MergedWrites``) and COMMIT. On PostgreSQL that is two round trips
(three when the subject has summaries to stale); two writers of one key queue on
the lock, so the later one supersedes the earlier. A key this store has not seen
is first put as a new key in one statement where the schema has the function
(PostgreSQL, migration 0014): the same steps on the server, or nothing written
when the key has an event already, and then the general path.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from memlineage.errors import DuplicateEventId
from memlineage.model import Clock, Event, NewEvent, OpKind
from memlineage.raw.ingest import check_event, utc_now
from memlineage.raw.validity import TrustPolicy, source_state
from memlineage.store.append import _insert_events, _Lines, _plan, check_batch
from memlineage.store.core import StoreCore
from memlineage.store.protocol import KeyVersions, KeyWrite
from memlineage.store.rows import (
    EVENT_COLUMNS,
    OP_COLUMNS,
    event_from_row,
    event_row,
    op_from_row,
)
from memlineage.store.sql import Statement, Tx, marks
from memlineage.store.staleness import STALEABLE
from memlineage.store.triggers import DEFAULT_TAIL_THRESHOLD, queue_after_invalidation, queue_tails

# The lock of a write that may start the subject (a put), and of one that may not (a
# delete of a key that was never put leaves no subject behind).
LOCK_OR_CREATE = (
    "INSERT INTO clocks (tenant, subject) VALUES (?, ?)"
    " ON CONFLICT (tenant, subject) DO UPDATE SET switches = clocks.switches"
    " RETURNING high_water, epoch, ops"
)
LOCK = (
    "UPDATE clocks SET switches = switches WHERE tenant = ? AND subject = ?"
    " RETURNING high_water, epoch, ops"
)
# What the triggers decide by, read under the lock: the alias's coverage and summary,
# the tenant's tail threshold, and whether any artifact could go stale.
SUBJECT_FACTS = (
    "a.covers_through, a.artifact_id, s.tail_threshold, EXISTS (SELECT 1 FROM"
    f" artifact_status t WHERE t.tenant = c.tenant AND t.subject = c.subject AND t.status IN"
    f" ({marks(len(STALEABLE))})) FROM clocks c"
    " LEFT JOIN aliases a ON a.tenant = c.tenant AND a.subject = c.subject"
    " LEFT JOIN job_settings s ON s.tenant = c.tenant WHERE c.tenant = ? AND c.subject = ?"
)
# A key's read is one statement of tagged rows (one snapshot, one round trip): its
# versions, the operations naming them, and with a write the subject's facts. Each row
# has every part's columns, NULL but its own; typed NULLs in the first part type the
# UNION's columns on PostgreSQL.
VERSION, OPERATION, FACTS = 0, 1, 2
KNOWN_KEYS = 100_000  # keys remembered per store (_known_keys), then forgotten at once
_NO_OP = (
    "CAST(NULL AS BIGINT), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, CAST(NULL AS BIGINT)"
)
_NO_FACTS = "CAST(NULL AS BIGINT), NULL, CAST(NULL AS BIGINT), CAST(NULL AS BOOLEAN)"
_EVENT_WIDTH = len(EVENT_COLUMNS.split(","))
_OP_WIDTH = len(OP_COLUMNS.split(","))
_NO_EVENT = ", ".join(["NULL"] * _EVENT_WIDTH)


@dataclass(frozen=True)
class _Locked:
    """The subject as its lock and SUBJECT_FACTS found it."""

    clock: Clock
    ops: int
    covers: int
    published: bool
    threshold: int
    staleable: bool


class KeyedMixin(StoreCore):
    # The comparison that orders ids by code point, as the range below needs.
    id_order: str = ""
    # Whether the operations' indexes on target and other order ids by code point.
    ops_by_id_range: bool = False
    # A new key's put in one statement, where the schema has it (PostgreSQL's 14): it
    # returns the new event's seq, or NULL having written nothing (not a new key).
    put_new_key_sql: str | None = None

    def key_versions(self, tenant: str, subject: str, prefix: str) -> KeyVersions:
        """The events of ``subject`` whose id is ``prefix`` followed by a version number."""
        sql, params = self._key_read(tenant, subject, prefix)
        rows, ops, _ = _parts(self._read_once(sql, params))
        if rows:
            self._known_keys().add((tenant, prefix))
        return _key_versions(rows, ops, prefix, self.policy)

    def write_key(
        self, tenant: str, subject: str, prefix: str, value: NewEvent | None, reason: str
    ) -> KeyWrite:
        """Append the key's next version (``value`` with the id ``<prefix><n>``, superseding
        the current one: its own id and ``supersedes`` are replaced), or with ``value`` None
        revoke the current one for ``reason``.

        A value whose text is the current one's changes nothing, nor does a revoke of a
        key without a current value. Ids are unique per tenant: an event of another
        subject holding the next version's id is ``DuplicateEventId``.
        """
        if value is not None:
            check_batch([value], _Lines())  # NUL, the subject's length: before the lock
        try:
            known = self._known_keys()
            new = (tenant, prefix) not in known
            known.add((tenant, prefix))
            if value is not None and new:
                appended = self._put_new_key(tenant, subject, prefix, value)
                if appended is not None:
                    return appended
            with self._pipelined_write() as tx:
                return self._write_key(tx, tenant, subject, prefix, value, reason)
        except self.integrity_errors:
            raise DuplicateEventId(
                f"the next version of key {prefix!r} is an event of another subject", field="id"
            ) from None

    def _known_keys(self) -> set[tuple[str, str]]:
        """The (tenant, prefix) of keys this store has seen versions of, or written: their
        puts take the general path at once rather than after ``_put_new_key``'s miss.
        Only a hint: a key written elsewhere costs that miss, never a wrong write."""
        known: set[tuple[str, str]] = self.__dict__.setdefault("_known_key_prefixes", set())
        if len(known) > KNOWN_KEYS:
            known.clear()
        return known

    def _put_new_key(
        self, tenant: str, subject: str, prefix: str, value: NewEvent
    ) -> KeyWrite | None:
        """A new key's first version in one statement (``put_new_key_sql``: the steps of
        ``_write_key`` on the server), or None when the put is not of a new key of a
        subject that has events, and nothing was written."""
        if self.put_new_key_sql is None:
            return None
        event = _next_version(value, prefix, KeyVersions((), False))
        row = event_row(tenant, event, 0, event.content_hash, utc_now())
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        params = (tenant, subject, prefix, upper, *row[2:3], *row[4:10], *row[11:])
        found = self._write_once(self.put_new_key_sql, (*params, DEFAULT_TAIL_THRESHOLD))
        return KeyWrite("appended", event.id) if found[0][0] is not None else None

    def _write_key(
        self, tx: Tx, tenant: str, subject: str, prefix: str, value: NewEvent | None, reason: str
    ) -> KeyWrite:
        lock = (LOCK if value is None else LOCK_OR_CREATE, (tenant, subject))
        locked, read = tx.all_together([lock, self._key_read(tenant, subject, prefix, True)])
        rows, ops, found = _parts(read)
        key = _key_versions(rows, ops, prefix, self.policy)
        current = key.current
        if not locked or (value is None and current is None):
            return KeyWrite("unchanged", None)
        subject_at = _subject_at(locked[0], found[0])
        if value is None:
            assert current is not None
            with tx.writes_together() as writes:
                self._invalidate(
                    writes, tenant, subject, subject_at, OpKind.REVOKE, current.id, reason
                )
            return KeyWrite("revoked", current.id)
        if current is not None and current.text == value.text:
            return KeyWrite("unchanged", current.id)
        event = _next_version(value, prefix, key)
        with tx.writes_together() as writes:
            replacing = current is not None
            self._append_version(writes, tenant, event, current, subject_at, replacing)
            if current is not None:
                self._invalidate(
                    writes,
                    tenant,
                    subject,
                    subject_at,
                    OpKind.REPLACE,
                    current.id,
                    other=event.id,
                    clock_set=True,
                )
        return KeyWrite("appended", event.id)

    def _key_read(self, tenant: str, subject: str, prefix: str, facts: bool = False) -> Statement:
        """The key's events, the operations that name one of them or set a policy, and
        with ``facts`` the subject's SUBJECT_FACTS (no row when it has no clock)."""
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)  # the first string past the prefix
        key = (tenant, prefix, upper, subject)
        named = (prefix, upper) if self.ops_by_id_range else key
        params: tuple[Any, ...] = (*key, *(((tenant, subject, *named) * 2) + (tenant, subject)))
        if facts:
            params += (*STALEABLE, tenant, subject)
        return _key_read_sql(self.id_order, self.ops_by_id_range, facts), params

    def _append_version(
        self,
        tx: Tx,
        tenant: str,
        event: NewEvent,
        current: Event | None,
        at: _Locked,
        replacing: bool = False,
    ) -> None:
        """The append's own steps (store/append.py) on what the lock read: no read here.
        ``replacing``: the clock update sets the replacement's epoch and operation seq too
        (``_invalidate`` with ``clock_set``), one update of the row instead of two."""
        subject = event.subject
        stored = {current.id: (subject, current.hash, current.seq)} if current else {}
        plan = _plan(tenant, [event], {subject: at.clock}, stored, _Lines())
        if at.clock.high_water == 0:
            self._start_subjects(tx, tenant, [subject])
        _insert_events(tx, plan.rows, None)
        high_water = plan.high_water[subject]
        sets, values = "high_water = ?", [high_water]
        if replacing:
            sets, values = f"{sets}, epoch = ?, ops = ?", [*values, *_invalidated(at)]
        tx.execute(
            f"UPDATE clocks SET {sets} WHERE tenant = ? AND subject = ?", (*values, tenant, subject)
        )
        queue_tails(
            tx, self.now_sql, tenant, {subject: high_water}, {subject: at.covers}, at.threshold
        )

    def _invalidate(
        self,
        tx: Tx,
        tenant: str,
        subject: str,
        at: _Locked,
        kind: OpKind,
        target: str,
        reason: str | None = None,
        other: str | None = None,
        clock_set: bool = False,
    ) -> None:
        """``_record_invalidation`` numbered from the lock's clock: it reads only to stale
        artifacts, and only when the subject has any that could go stale. ``clock_set``:
        the clock has its new epoch and operation seq already (``_append_version``)."""
        epoch, op_seq = _invalidated(at)
        if not clock_set:
            tx.execute(
                "UPDATE clocks SET epoch = ?, ops = ? WHERE tenant = ? AND subject = ?",
                (epoch, op_seq, tenant, subject),
            )
        operation = (kind, target, other, None, None, None, None, reason)
        self._insert_operation(tx, tenant, subject, op_seq, epoch, operation)
        stale: tuple[str, ...] = ()
        if at.staleable:
            stale = self._mark_descendants_stale(
                tx, tenant, subject, [target], f"{kind} of {target}"
            )
        queue_after_invalidation(
            tx, self.now_sql, tenant, subject, f"{kind} of {target}", stale, at.published
        )


@functools.cache
def _key_read_sql(id_order: str, ops_by_id_range: bool, facts: bool) -> str:
    """The statement of ``_key_read`` (its text depends on the backend alone)."""
    in_range = (
        f"SELECT id FROM events WHERE tenant = ? AND id{id_order} >= ?"
        f" AND id{id_order} < ? AND subject = ?"
    )
    versions = (
        f"SELECT {VERSION}, {EVENT_COLUMNS}, {_NO_OP}, {_NO_FACTS}"
        f" FROM ({in_range.replace('SELECT id', f'SELECT {EVENT_COLUMNS}', 1)}) v"
    )
    # The operations naming an id of the range (a superset: _key_versions keeps those
    # naming the latest version): SQLite's ids and index compare by code point, so the
    # range is looked up there; PostgreSQL's index has the database's collation.
    names = "{0} >= ? AND {0} < ?" if ops_by_id_range else f"{{0}} IN ({in_range})"
    part = f"SELECT {OP_COLUMNS} FROM operations WHERE tenant = ? AND subject = ? AND"
    target, other = (f"{part} {names.format(column)}" for column in ("target", "other"))
    sql = (
        f"{versions} UNION ALL SELECT {OPERATION}, {_NO_EVENT}, {OP_COLUMNS}, NULL, NULL, NULL,"
        f" NULL FROM ({target} UNION {other} UNION {part} kind = 'policy') o"
    )
    if facts:
        nulls = ", ".join(["NULL"] * (_EVENT_WIDTH + _OP_WIDTH))
        sql += f" UNION ALL SELECT {FACTS}, {nulls}, {SUBJECT_FACTS}"
    return f"{sql} ORDER BY 1, 2, {2 + _EVENT_WIDTH}"  # by part, then seq or op_seq


def _parts(rows: Sequence[Any]) -> tuple[list[Any], list[Any], list[Any]]:
    """A key read's rows (``_key_read``) as its events, operations and facts rows."""
    width = _EVENT_WIDTH
    parts: tuple[list[Any], list[Any], list[Any]] = ([], [], [])
    for row in rows:
        tag = row[0]
        if tag == VERSION:
            parts[0].append(row[1 : 1 + width])
        elif tag == OPERATION:
            parts[1].append(row[1 + width : 1 + width + _OP_WIDTH])
        else:
            parts[2].append(row[1 + width + _OP_WIDTH :])
    return parts


def _key_versions(
    rows: Sequence[Any], ops: Sequence[Any], prefix: str, policy: TrustPolicy
) -> KeyVersions:
    """The key's versions, and the verdict on the latest from the operations naming it."""
    versions = [
        e for e in map(event_from_row, rows) if e.id[len(prefix) :].isdecimal()
    ]  # a key that extends this one ("a" and "a:1") shares the range
    if not versions:
        return KeyVersions((), False)
    latest = versions[-1]
    about = [
        op
        for op in map(op_from_row, ops)
        if op.target == latest.id or op.other == latest.id or op.kind is OpKind.POLICY
    ]
    state = source_state([latest], about, policy)
    return KeyVersions(tuple(versions), latest.id not in state.invalid)


def _invalidated(at: _Locked) -> tuple[int, int]:
    """The epoch and operation seq after one invalidation (the lock holds the clock still)."""
    return at.clock.epoch + 1, at.ops + 1


def _subject_at(clock: Sequence[Any], facts: Sequence[Any]) -> _Locked:
    covers, artifact, threshold, staleable = facts
    return _Locked(
        clock=Clock(int(clock[0]), int(clock[1])),
        ops=int(clock[2]),
        covers=int(covers or 0),  # a new subject's alias is made with its first event
        published=bool(artifact),
        threshold=DEFAULT_TAIL_THRESHOLD if threshold is None else int(threshold),
        staleable=bool(staleable),
    )


def _next_version(value: NewEvent, prefix: str, key: KeyVersions) -> NewEvent:
    """``value`` as the key's next version, checked as ``Memory.add`` checks an event."""
    current = key.current
    return check_event(
        replace(
            value,
            id=f"{prefix}{len(key.versions) + 1}",
            supersedes=current.id if current is not None else None,
        )
    )
