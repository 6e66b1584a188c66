"""One detection run's working set: read once per run, not once per event.

A run checks the events after the watermark in seq order. Each event needs the
latest ``WINDOW`` earlier items of each of its keys, and the raw layer's verdict
on the events those items come from. Asking the database for both at every
event cost a query per key, an events read, an operations read and a scan of
the policy operations per event. A run instead reads each key's window once
(the latest items below the run's first seq) and keeps it up to date in memory
as its events are checked, so a later event of the run sees the earlier ones
exactly as it would have read them back from ``event_keys``; the rows are
written once per chunk of events. The events and operations a verdict needs are
read once per run too, except that the operations naming an event the run just
recorded a conflict on are read again when next needed.

Nothing but the run writes ``event_keys`` or operations under the subject's
clock lock, which the run holds, so what it keeps cannot go out of date.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memlineage.meaning.contradictions import KeyedItem, stored_rows
from memlineage.model import Event, Operation
from memlineage.raw.validity import SourceState, TrustPolicy, source_state
from memlineage.store.reader import SqlReader
from memlineage.store.rows import OP_COLUMNS, op_from_row
from memlineage.store.sql import IN_CHUNK, Tx, chunks, marks

# Earlier items read per key: a repeated statement beyond the latest WINDOW items of its
# key is not compared again (it was compared with its successors when they arrived).
WINDOW = 16
KEYS_PER_READ = 100  # one sub-select per key in a UNION ALL (SQLite allows 500)
INSERT_KEYS = (
    "INSERT INTO event_keys (tenant, subject, key, seq, event_id, item)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)


def newest_first(rows: Iterable[Sequence[Any]]) -> list[Sequence[Any]]:
    """Rows (event_id, seq, key, item, ...) by seq, then item text, both descending.

    Items of one event share a seq; ordering them by their text (code points, as
    SQLite's index and ``COLLATE "C"`` do) decides which of them fall within the
    window the same way whether they were read back or kept in memory.
    """
    return sorted(rows, key=lambda r: (int(r[1]), str(r[3])), reverse=True)


class DetectionRun:
    """The earlier items, events and operations one detection run of a subject reads."""

    def __init__(
        self, tx: Tx, tenant: str, subject: str, first_seq: int, *, by_code_point: str = ""
    ):
        self.tx = tx
        self.tenant = tenant
        self.subject = subject
        self.first_seq = first_seq  # the windows read hold only items of earlier runs
        self.by_code_point = by_code_point  # the COLLATE clause that orders text by code point
        self.windows: dict[str, list[KeyedItem]] = {}  # key -> latest items, newest first
        self.unwritten: list[tuple[Any, ...]] = []  # event_keys rows of checked events
        self.events: dict[str, Event | None] = {}  # None: no such event of the subject
        self.ops_naming: dict[str, dict[int, Operation]] = {}  # event id -> op_seq -> op
        self.policy_ops: list[Operation] | None = None

    # -- earlier items --

    def read_windows(self, keys: Iterable[str]) -> None:
        """The latest ``WINDOW`` items of each key below the run, for keys not read yet.

        The items' events are read apart (by seq), not joined: a generic plan made
        while the tables were small once joined each item to every event of the
        subject. Every ``event_keys`` row has its event (an erased event keeps its
        row and loses its keys), so the window is the one the join read.
        """
        missing = sorted(set(keys) - self.windows.keys())
        for key in missing:
            self.windows[key] = []
        rows: list[Sequence[Any]] = []
        for chunk in chunks(missing, KEYS_PER_READ):
            one_key = (
                "SELECT * FROM (SELECT event_id, seq, key, item FROM event_keys"
                " WHERE tenant = ? AND subject = ? AND key = ? AND seq < ?"
                f" ORDER BY seq DESC, item{self.by_code_point} DESC LIMIT ?) AS w"
            )
            params: list[Any] = []
            for key in chunk:
                params += [self.tenant, self.subject, key, self.first_seq, WINDOW]
            rows += self.tx.all(" UNION ALL ".join([one_key] * len(chunk)), params)
        by_seq = self._events_at(sorted({int(r[1]) for r in rows}))
        for event_id, seq, key, body in newest_first(rows):
            event = by_seq.get(int(seq))
            if event is not None:  # always: the join this replaces dropped none either
                self.windows[key].append(
                    KeyedItem.from_row(event_id, int(seq), key, body, event.at, event.kind)
                )

    def _events_at(self, seqs: Sequence[int]) -> dict[int, Event]:
        """The subject's events at ``seqs``, which the verdict will want as well."""
        found = SqlReader(self.tx, self.tenant).events_by_seq(self.subject, seqs)
        self.know_events(found)
        return {e.seq: e for e in found}

    def earlier(self, items: Sequence[KeyedItem]) -> list[KeyedItem]:
        """The latest ``WINDOW`` earlier items of each key the items have, key by key."""
        return [i for key in sorted({i.key for i in items}) for i in self.windows[key]]

    def remember(self, event: Event, items: Sequence[KeyedItem]) -> None:
        """Add a checked event's items to the windows, and its rows to those to write."""
        rows = stored_rows(self.tenant, self.subject, items)
        self.unwritten += rows
        new: dict[str, list[KeyedItem]] = {}
        for event_id, seq, key, body in newest_first((r[4], r[3], r[2], r[5]) for r in rows):
            new.setdefault(key, []).append(
                KeyedItem.from_row(event_id, seq, key, body, event.at, event.kind)
            )
        for key, latest in new.items():
            self.windows[key] = (latest + self.windows[key])[:WINDOW]

    def write_keys(self) -> None:
        if self.unwritten:
            self.tx.executemany(INSERT_KEYS, self.unwritten)
        self.unwritten = []

    # -- the verdict --

    def know_events(self, events: Iterable[Event]) -> None:
        """Events the run read already (its own): the verdict need not read them again."""
        self.events.update((e.id, e) for e in events)

    def verdict(self, ids: Sequence[str], policy: TrustPolicy) -> SourceState:
        """The raw layer's verdict on a few events, from the operations that name them.

        Reading only those operations (and the policy ones) keeps a detection run
        from folding the subject's whole operation log once per new event.
        """
        self._read_events([i for i in ids if i not in self.events])
        self._read_ops([i for i in ids if i not in self.ops_naming])
        ops: dict[int, Operation] = {}
        for event_id in ids:
            ops.update(self.ops_naming[event_id])
        for op in self._policy_ops():
            ops[op.op_seq] = op
        events = [e for e in (self.events[i] for i in ids) if e is not None]
        return source_state(events, [ops[k] for k in sorted(ops)], policy)

    def forget_ops(self, ids: Iterable[str]) -> None:
        """The run recorded operations naming ``ids``: read theirs again when next needed."""
        for event_id in ids:
            self.ops_naming.pop(event_id, None)

    def _read_events(self, ids: Sequence[str]) -> None:
        found = SqlReader(self.tx, self.tenant).events_by_id(self.subject, ids)
        self.events.update(dict.fromkeys(ids, None))
        self.know_events(found)

    def _read_ops(self, ids: Sequence[str]) -> None:
        for event_id in ids:
            self.ops_naming[event_id] = {}
        for chunk in chunks(ids, IN_CHUNK // 2):
            asked = set(chunk)
            for row in self.tx.all(  # two index lookups; an OR of them would scan the log
                f"SELECT {OP_COLUMNS} FROM operations WHERE tenant = ? AND subject = ?"
                f" AND target IN ({marks(len(chunk))}) UNION"
                f" SELECT {OP_COLUMNS} FROM operations WHERE tenant = ? AND subject = ?"
                f" AND other IN ({marks(len(chunk))})",
                (self.tenant, self.subject, *chunk, self.tenant, self.subject, *chunk),
            ):
                op = op_from_row(row)
                for named in asked.intersection((op.target, op.other)):
                    self.ops_naming[named][op.op_seq] = op

    def _policy_ops(self) -> list[Operation]:
        """The subject's policy operations, read once: a detection run records none."""
        if self.policy_ops is None:
            self.policy_ops = [
                op_from_row(row)
                for row in self.tx.all(
                    f"SELECT {OP_COLUMNS} FROM operations WHERE tenant = ? AND subject = ?"
                    " AND kind = 'policy'",
                    (self.tenant, self.subject),
                )
            ]
        return self.policy_ops
