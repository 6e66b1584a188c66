"""Append (I1, I2): a plain tail append advances H only; a retry is a no-op.

A batch is all or nothing: one transaction over every subject it names. It
takes the subjects' clock row locks first (I7), in sorted subject order so
that two batches over the same subjects queue instead of deadlocking, then
runs every check that needs the store, and writes only when all passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlineage.errors import BadInput, DuplicateEventId, NotFound
from memlineage.model import Clock, NewEvent, OpKind
from memlineage.progress import Advance, Progress, begin
from memlineage.raw.ingest import PLAIN_FIELDS, utc_now
from memlineage.store.core import StoreCore
from memlineage.store.protocol import Appended
from memlineage.store.rows import EVENT_COLUMNS, INSERT_COLUMNS, event_row
from memlineage.store.sql import Tx
from memlineage.store.triggers import queue_after_append

NUL = "\x00"
# With a progress callback, rows are written in chunks of this many, inside the one
# transaction, and each chunk is reported (about 0.1 s of SQLite's time).
APPEND_CHUNK = 1000
# Tenants and subjects lead every index, and artifact ids embed the subject: at most
# 400 UTF-8 bytes each keeps the widest index row (derivation: tenant, subject, an
# event id of 200 four-byte characters, an artifact id) below PostgreSQL's btree
# limit of 2704 bytes. That is 400 ASCII characters, 133 CJK, 100 emoji; ids keep
# their own limit of 200 characters.
MAX_NAME_BYTES = 400
# (subject, hash, seq) of a stored event, by id
Stored = dict[str, tuple[str, str, int]]


class AppendMixin(StoreCore):
    def append(
        self, tenant: str, events: Sequence[NewEvent], progress: Progress | None = None
    ) -> list[Appended]:
        """Append a batch in one transaction: every event is stored, or none is.

        A refusal names the event's 1-based position in ``events`` as ``line``
        (``Memory.add`` maps it to the input's line). The checks that need no
        store run before the transaction, the others under the clock locks and
        before the first event row is written; a refusal rolls the whole batch
        back, the new subjects' clock rows included. ``progress`` hears
        ``appending`` in events (see memlineage.progress).
        """
        if not events:
            return []
        where = _Lines()
        check_batch(events, where)
        advance = begin(progress, "appending", len(events))
        try:
            return self._append_batch(tenant, events, where, advance)
        except self.integrity_errors:
            # Ids are unique per tenant, but the locks are per subject: the same id
            # raced in from another subject. Once more under the locks, the stored
            # event is seen and the retry is either a no-op or DuplicateEventId.
            return self._append_batch(tenant, events, where, advance)

    def _append_batch(
        self, tenant: str, events: Sequence[NewEvent], where: _Lines, advance: Advance | None
    ) -> list[Appended]:
        with self._write() as tx:
            clocks = self._lock_or_create_clocks(tx, tenant, _subjects(events))
            wanted = {e.id for e in events} | {e.supersedes for e in events if e.supersedes}
            stored = self.stored_events(tx, tenant, list(wanted))
            plan = _plan(tenant, events, clocks, stored, where)
            _insert_events(tx, plan.rows, advance)
            moved = {s: h for s, h in plan.high_water.items() if h != clocks[s].high_water}
            if moved:
                tx.executemany(
                    "UPDATE clocks SET high_water = ? WHERE tenant = ? AND subject = ?",
                    [(h, tenant, s) for s, h in moved.items()],
                )
                queue_after_append(tx, self.now_sql, tenant, moved)
            for subject, old, new in plan.replaced:
                self._record_invalidation(
                    tx, tenant, subject, OpKind.REPLACE, old, other=new, invalidates=old
                )
            if advance is not None:
                advance(len(events) - len(plan.rows))  # the retries: stored already
            return plan.out

    def stored_events(self, tx: Tx, tenant: str, ids: Sequence[str]) -> Stored:
        """(subject, hash, seq) of each of ``ids`` that is stored.

        PostgreSQL looks them up with one array: a plan that does not depend on
        the table's statistics, one statement text for every batch size.
        """
        found: Stored = {}
        for condition, params in tx.where_in("id", ids):
            for event_id, subject, hash_, seq in tx.all(
                f"SELECT id, subject, hash, seq FROM events WHERE tenant = ? AND {condition}",
                (tenant, *params),
            ):
                found[event_id] = (subject, hash_, int(seq))
        return found


def _insert_events(tx: Tx, rows: list[tuple[Any, ...]], advance: Advance | None) -> None:
    """One insert without a progress callback (the fastest); chunks reported with one."""
    columns = f"tenant, {EVENT_COLUMNS}"
    if all(row[-1] is None for row in rows):  # no speaker: the row of every earlier schema
        columns = f"tenant, {INSERT_COLUMNS}"
        rows = [row[:-1] for row in rows]
    if advance is None:
        if rows:
            tx.insert_rows("events", columns, rows)
        return
    for start in range(0, len(rows), APPEND_CHUNK):
        chunk = rows[start : start + APPEND_CHUNK]
        tx.insert_rows("events", columns, chunk)
        advance(len(chunk))


class _Lines:
    """The line an error names for the event at ``index``: its 1-based position."""

    def __call__(self, index: int) -> int:
        return index + 1


def _subjects(events: Sequence[NewEvent]) -> list[str]:
    """The batch's subjects in the one order every writer locks them in."""
    return sorted({e.subject for e in events})


def check_batch(events: Sequence[NewEvent], where: _Lines) -> None:
    """The checks that need no store: no NUL, one content per id, no replacement cycle."""
    first: dict[str, int] = {}
    for index, event in enumerate(events):
        field = _field_with_nul(event)
        if field is not None:
            # PostgreSQL cannot store NUL in text; refusing it here keeps SQLite in step.
            raise BadInput("must not contain NUL (U+0000)", line=where(index), field=field)
        if len(event.subject) * 4 > MAX_NAME_BYTES and name_too_long(event.subject):
            raise BadInput(
                f"must be at most {MAX_NAME_BYTES} bytes in UTF-8",
                line=where(index),
                field="subject",
            )
        seen = first.setdefault(event.id, index)
        if seen != index and events[seen].content_hash != event.content_hash:
            raise DuplicateEventId(
                f"event {event.id!r} appears on line {where(seen)} with other content",
                line=where(index),
                field="id",
            )
    _refuse_cycles(events, first, where)


def name_too_long(name: str) -> bool:
    """A tenant or subject longer than MAX_NAME_BYTES in UTF-8."""
    return len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES


def _field_with_nul(event: NewEvent) -> str | None:
    # One f-string of every plain field (None reads "None"): the common case, fast.
    joined = (
        f"{event.id}{event.subject}{event.text}{event.trust}"
        f"{event.at}{event.kind}{event.project}{event.supersedes}{event.speaker}"
    )
    if NUL not in joined and not event.taint and not event.facts:
        return None
    for name in PLAIN_FIELDS:
        value = getattr(event, name)
        if value is not None and NUL in value:
            return name
    if any(NUL in label for label in event.taint):
        return "taint"
    for i, fact in enumerate(event.facts):
        for name in ("key", "value", "unit", "kind"):
            value = getattr(fact, name)
            if isinstance(value, str) and NUL in value:
                return f"facts[{i}].{name}"
    return None


def _refuse_cycles(events: Sequence[NewEvent], first: dict[str, int], where: _Lines) -> None:
    """Refuse replacements that go round in a circle (they would invalidate each other).

    Stored events only replace older ones, so a cycle lies within the batch.
    Each id is walked once, so a long chain of replacements stays linear.
    """
    replaces = {e.id: e.supersedes for e in events if e.supersedes}
    done: set[str] = set()
    for start in replaces:
        path: dict[str, None] = {}  # insertion-ordered: the walk so far
        node: str | None = start
        while node is not None and node not in done and node not in path:
            path[node] = None
            node = replaces.get(node)
        if node is not None and node in path:
            ring = list(path)[list(path).index(node) :]
            index = min(first[i] for i in ring)
            head = events[index].id
            chain = " -> ".join([*_rotate(ring, head), head])
            raise BadInput(f"replacement cycle {chain}", line=where(index), field="supersedes")
        done.update(path)


def _rotate(ring: list[str], head: str) -> list[str]:
    at = ring.index(head)
    return ring[at:] + ring[:at]


class _Plan:
    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.out: list[Appended] = []
        self.high_water: dict[str, int] = {}
        self.replaced: list[tuple[str, str, str]] = []  # (subject, old, new)


def _plan(
    tenant: str,
    events: Sequence[NewEvent],
    clocks: dict[str, Clock],
    stored: Stored,
    where: _Lines,
) -> _Plan:
    """Seqs and rows for the batch, or the first refusal; nothing is written here."""
    plan = _Plan()
    high_water = plan.high_water = {s: c.high_water for s, c in clocks.items()}
    rows, out = plan.rows, plan.out
    known = dict(stored)
    now = utc_now()
    for index, event in enumerate(events):
        hash_ = event.content_hash
        previous = known.get(event.id)
        if previous is not None:
            # I2: the same id with the same hash is an idempotent retry.
            if previous[1] != hash_:
                raise DuplicateEventId(
                    f"event {event.id!r} exists with different content; ids are immutable",
                    line=where(index),
                    field="id",
                )
            out.append(Appended(event.id, previous[0], previous[2], created=False))
            continue
        subject = event.subject
        seq = high_water[subject] = high_water[subject] + 1
        known[event.id] = (subject, hash_, seq)
        rows.append(event_row(tenant, event, seq, hash_, now))
        out.append(Appended(event.id, subject, seq, True))
        if event.supersedes is not None:
            plan.replaced.append((event.subject, event.supersedes, event.id))
    _check_targets(events, known, where)
    return plan


def _check_targets(events: Sequence[NewEvent], known: Stored, where: _Lines) -> None:
    """A replaced event exists, stored or in the batch, in the replacement's subject."""
    for index, event in enumerate(events):
        target = event.supersedes
        if target is None:
            continue
        if target not in known:
            raise NotFound(
                f"superseded event {target!r} does not exist",
                line=where(index),
                field="supersedes",
            )
        if known[target][0] != event.subject:
            raise BadInput(
                f"event {target!r} belongs to another subject ({known[target][0]!r});"
                " a replacement stays in its subject",
                line=where(index),
                field="supersedes",
            )
