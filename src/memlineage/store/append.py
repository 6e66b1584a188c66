"""Append (I1, I2): a plain tail append advances H only; a retry is a no-op."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import BadInput, DuplicateEventId, NotFound
from ..ingest import utc_now
from ..model import NewEvent, OpKind
from .core import StoreCore
from .protocol import Appended
from .rows import EVENT_COLUMNS, event_row
from .sql import Tx, chunks, marks
from .triggers import queue_after_append


class AppendMixin(StoreCore):
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
                queue_after_append(tx, self.now_sql, tenant, subject, seq)
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
