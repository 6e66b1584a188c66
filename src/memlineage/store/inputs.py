"""A consolidation's read of its subject, from what this process read of it last time.

Events are append-only, and an operation is the only way anything stored
changes what an event says or whether it is valid (a revocation, a conflict, a
trust policy, an erasure, which rewrites the event's row): each one advances
the clock's operation counter under the subject's lock, and is numbered by it.
So the events up to the last read's high water are still the ones it read
unless an erasure was recorded since, and only the events and the operations
after that read are fetched: a +100 on a 100,000-event subject reads 100 rows,
not 100,000. What the new operations say of the older events (a detected
conflict among the new events leaves them as they were) is selection's to
judge (consolidation/select.py).
The switch takes the same fence's word for its re-validation (docs/benchmarks.md,
"A switch that re-reads the tail").

The head is read without the published summary's output when this process
wrote that summary (a worker's next run of the subject): the output is some
400 bytes of JSON per event, and an artifact's row never changes but by an
erasure, which is an operation.

A whole read also reads the items earlier runs stored for its events (schema 17,
docs/storage.md, "Stored items"), so that a process that never read the subject
extracts only the events it finds none for.

The last event read is read again beside the new ones and must be the same
(id and hash): a database swapped under a long-lived process (a restore, a
test that drops and recreates one) is read whole. Kept per store object, one
read per subject, bounded in events, emptied by an erasure in this process
(meaning/caches.py); another process sees the erasure's operation and reads
whole.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memlineage.meaning import caches
from memlineage.meaning.extract import RULES_VERSION
from memlineage.model import Artifact, Event, Item, Output
from memlineage.store import deltas
from memlineage.store.protocol import Head, SubjectInput
from memlineage.store.reader import (
    events_statement,
    head_from_row,
    head_statement,
    operations_follow_on,
    operations_statement,
)
from memlineage.store.rows import (
    event_from_row,
    items_from_text,
    manifest_from_json,
    op_from_row,
    read_on_base,
)
from memlineage.store.sql import Statement

#: events kept per store in all (the subjects read last are kept)
KNOWN_EVENTS = 1 << 18

ReadTogether = Callable[[Sequence[Statement]], list[list[Any]]]


@dataclass(frozen=True)
class _Known:
    ops: int  # the clock's operation counter when it was read
    input: SubjectInput


_known: weakref.WeakKeyDictionary[object, caches.LastPerKey[tuple[str, str], _Known]] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()  # a server reads on several threads
#: outputs of the artifacts this process wrote last, per store (tenant, artifact id),
#: bounded by their parts in all like the bases they are stored on (store/deltas.py)
WRITTEN_PARTS = 1 << 20
_written: weakref.WeakKeyDictionary[object, caches.LastPerKey[tuple[str, str], Output]] = (
    weakref.WeakKeyDictionary()
)


def wrote(store: object, tenant: str, artifact_id: str, output: Output) -> None:
    """``output`` is the one stored for ``artifact_id`` (the writer serialised it)."""
    with _lock:
        kept = _written.get(store)
        if kept is None:
            kept = _written[store] = caches.LastPerKey(
                deltas.parts, WRITTEN_PARTS, registered=False
            )
    kept.keep((tenant, artifact_id), output)


def consolidation_input(
    store: object, read_together: ReadTogether, tenant: str, subject: str
) -> SubjectInput | None:
    """Head, events up to its high water and operations, in one snapshot (one round
    trip; two when an operation was recorded since this process's last read)."""
    with _lock:
        kept = _known.get(store)
        if kept is None:
            kept = _known[store] = caches.LastPerKey(_events_read, KNOWN_EVENTS, registered=False)
    known = kept.get((tenant, subject))
    found = _read_after(store, read_together, tenant, subject, known) if known else None
    if found is None:
        found = _read_whole(read_together, tenant, subject)
    if found is None:
        return None
    # the stored items serve this run's extraction once; the next run in this process
    # reuses what extraction made of them (extract.extract_with_stored)
    kept.keep((tenant, subject), replace(found, input=replace(found.input, items={})))
    _record_base(store, read_together, tenant, found.input.head.artifact)
    return found.input


def _record_base(
    store: object, read_together: ReadTogether, tenant: str, published: Artifact | None
) -> None:
    """What the published artifact's output was read on, so that the next run stores
    its output as a delta even in a process that never wrote the subject (the writer's
    fence still checks the base under the lock: store/switch.py)."""
    if published is None or published.output is None:
        return
    if deltas.recorded(store, tenant, published.id) is not None:
        return  # this process stored it, or read it before
    base = read_on_base(published.output)
    if base is None:  # read whole: it is a base itself
        base = deltas.StoredBase.whole(published, published.output)
    elif not base.inputs:  # read as a delta here: its base's inputs are not known yet
        base = deltas.recorded(store, tenant, base.id) or _with_inputs(read_together, tenant, base)
    deltas.record(store, tenant, published.id, base)


def _with_inputs(
    read_together: ReadTogether, tenant: str, base: deltas.StoredBase
) -> deltas.StoredBase:
    """``base`` with its inputs (its manifest, read once per process and base): a delta on
    it links only what the base did not read (store/switch.py, ``_edges_from``)."""
    (rows,) = read_together(
        [("SELECT manifest FROM artifacts WHERE tenant = ? AND id = ?", (tenant, base.id))]
    )
    if not rows:
        return base  # its deltas then link every input
    return replace(base, inputs=frozenset(manifest_from_json(rows[0][0]).input_ids))


def _events_read(known: _Known) -> int:
    return len(known.input.events)


def _read_whole(read_together: ReadTogether, tenant: str, subject: str) -> _Known | None:
    heads, events, ops, stored = read_together(
        [
            head_statement(tenant, subject, ", c.ops"),
            events_statement(tenant, subject),
            operations_statement(tenant, subject),
            stored_items_statement(tenant, subject),
        ]
    )
    if not heads:
        return None
    head = head_from_row(heads[0])
    # The clock and the events move together (one append): none is past high water.
    found = [event_from_row(r) for r in events if r[0] <= head.clock.high_water]
    return _Known(
        int(heads[0][-1]),
        SubjectInput(
            head,
            tuple(found),
            tuple(op_from_row(r) for r in ops),
            _stored_items(found, stored),
        ),
    )


def stored_items_statement(tenant: str, subject: str) -> Statement:
    """The subject's stored items of the current extraction rules (schema 17)."""
    return (
        "SELECT seq, items FROM event_items WHERE tenant = ? AND subject = ? AND rules = ?",
        (tenant, subject, RULES_VERSION),
    )


def _stored_items(events: Sequence[Event], rows: Sequence[Sequence[Any]]) -> _StoredItems:
    """seq -> the stored items of each event read (an erased event has no row)."""
    ids = {e.seq: e.id for e in events}
    return _StoredItems({int(seq): (ids[int(seq)], text) for seq, text in rows if int(seq) in ids})


class _StoredItems(Mapping[int, tuple[Item, ...]]):
    """The stored items by seq, each event's parsed when asked for: a run that finds the
    events' items in this process already (extraction's last call) parses none."""

    def __init__(self, rows: dict[int, tuple[str, str]]) -> None:
        self._rows = rows

    def __getitem__(self, seq: int) -> tuple[Item, ...]:
        event_id, text = self._rows[seq]
        return items_from_text(text, event_id)

    def get(self, seq: int, default: Any = None) -> Any:
        """``Mapping.get`` without its KeyError per event that has no row (every event
        of a subject's first build)."""
        row = self._rows.get(seq)
        return items_from_text(row[1], row[0]) if row is not None else default

    def __iter__(self) -> Iterator[int]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


def _read_after(
    store: object, read_together: ReadTogether, tenant: str, subject: str, known: _Known
) -> _Known | None:
    """``known`` and the events after it; None: read the subject whole."""
    last = known.input.events[-1] if known.input.events else None
    after = last.seq - 1 if last is not None else 0
    heads, rows, op_rows = read_together(
        [
            head_statement(tenant, subject, ", c.ops", output=False),
            events_statement(tenant, subject, after),
            operations_statement(tenant, subject, known.ops),
        ]
    )
    if not heads:
        return None
    ops = int(heads[0][-1])
    new_ops = tuple(op_from_row(r) for r in op_rows)
    if not operations_follow_on(new_ops, known.ops, ops):
        return None
    head = _with_output(store, read_together, tenant, subject, head_from_row(heads[0]))
    if head is None:
        return None
    found = [event_from_row(r) for r in rows]
    if last is not None:
        if not found or (found[0].id, found[0].hash) != (last.id, last.hash):
            return None  # not the database this process read
        found = found[1:]
    tail = tuple(e for e in found if e.seq <= head.clock.high_water)
    # the same operations object while none was recorded: selection then judges the tail
    operations = known.input.operations + new_ops if new_ops else known.input.operations
    return _Known(ops, SubjectInput(head, known.input.events + tail, operations))


def _with_output(
    store: object, read_together: ReadTogether, tenant: str, subject: str, head: Head
) -> Head | None:
    """``head`` with its artifact's output: the one this process wrote, or read now
    (None: the head moved between the two reads, read the subject whole)."""
    artifact = head.artifact
    if artifact is None:
        return head
    with _lock:
        written = _written.get(store)
    output = written.get((tenant, artifact.id)) if written is not None else None
    if output is not None:
        return replace(head, artifact=replace(artifact, output=output))
    (rows,) = read_together([head_statement(tenant, subject)])
    again = head_from_row(rows[0]) if rows else None
    if again is None or again.alias != head.alias:
        return None
    return replace(head, artifact=again.artifact)  # the clock the events were read under


def forget_inputs() -> None:
    """What a new process starts with: every subject is read whole."""
    with _lock:
        _known.clear()
        _written.clear()


caches.register(forget_inputs)
