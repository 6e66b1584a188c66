"""The embedding job: vectors of a subject's events, computed off the append.

Like detection (store/detect.py), the job catches up to the high-water mark from
a watermark on the subject's clock (``vectors_through``, with the number of the
tenant's embedder it holds for, ``vectors_embedder``), so a run is idempotent
and a crash loses nothing. Unlike detection it computes outside any
transaction: each chunk of events is read in one snapshot, embedded with no lock
held (an append is never kept waiting for a model), and written in a short
transaction that takes the subject's clock lock first (I7) and checks again
that the watermark did not move and that no event of the chunk was erased in
the meantime (an erased text must leave no vector behind).

A tenant's embedder is versioned data: ``embedders`` keeps every one it had,
the latest is current. When it changes, the job starts again from seq 0 and
overwrites each vector; until it is done, a vector of the old embedder still
names that one, so recall knows which events it may compare with the query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memlineage.errors import BadInput, NotFound
from memlineage.model import Event
from memlineage.progress import Advance
from memlineage.raw.ingest import utc_now
from memlineage.recall.embed import Embedder, EmbedderId, Vectors, identity
from memlineage.store.core import StoreCore
from memlineage.store.protocol import Embedded
from memlineage.store.reader import SqlReader
from memlineage.store.sql import Tx, chunks, marks
from memlineage.store.vector_rows import current_embedder, to_bytes

EMBED_CHUNK = 512  # events read, embedded and written at a time (bounds memory and lock time)
UPSERT = (
    "INSERT INTO event_vectors (tenant, subject, seq, embedder, vector) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (tenant, subject, seq) DO UPDATE SET embedder = excluded.embedder,"
    " vector = excluded.vector"
)


@dataclass(frozen=True)
class _Chunk:
    """What one step read: the watermark it saw and the events to embed."""

    seen: tuple[int, int]  # (vectors_through, vectors_embedder) as read
    upto: int  # the watermark once the chunk is written
    high_water: int
    events: tuple[Event, ...]


class VectorsMixin(StoreCore):
    def set_embedder(self, tenant: str, embedder: EmbedderId) -> int:
        """Make ``embedder`` the tenant's current one; its number (0: ``none``, never set).

        Setting the current one again changes nothing. ``none`` after another
        embedder is recorded too, so the old vectors stop counting as current.
        """
        with self._read() as tx:
            current = current_embedder(tx, tenant)
        while True:
            if current is not None and current[1] == embedder:
                return current[0]
            if current is None and embedder.dims == 0:
                return 0
            number = 1 if current is None else current[0] + 1
            with self._write() as tx:
                tx.execute(
                    "INSERT INTO embedders (tenant, version, model, model_version, dims, set_at)"
                    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (tenant, number, embedder.name, embedder.version, embedder.dims, utc_now()),
                )
                current = current_embedder(tx, tenant)  # ours, or a racing writer's

    def embedder_settings(self, tenant: str) -> tuple[int, EmbedderId] | None:
        """The tenant's current embedder: its number and identity (None: never set)."""
        with self._one_statement(read_only=True) as tx:  # a worker asks between jobs
            return current_embedder(tx, tenant)

    def pending_embedding(self, tenant: str) -> list[str]:
        """Subjects with events that have no vector of the tenant's current embedder."""
        with self._read() as tx:
            current = current_embedder(tx, tenant)
            if current is None or current[1].dims == 0:
                return []
            rows = tx.all(
                "SELECT subject FROM clocks WHERE tenant = ? AND (vectors_embedder <> ?"
                " OR vectors_through < high_water) ORDER BY subject",
                (tenant, current[0]),
            )
        return [str(r[0]) for r in rows]

    def embed_pending(
        self,
        tenant: str,
        subject: str,
        embedder: Embedder,
        limit: int | None = None,
        embedded: Advance | None = None,
    ) -> Embedded:
        """Embed the subject's events after the watermark (at most ``limit`` of them).

        ``embedder`` becomes the tenant's current one. ``none`` writes no vector.
        ``embedded`` is called with the number of events of each chunk written.
        """
        number = self.set_embedder(tenant, identity(embedder))
        written = 0
        while True:
            room = EMBED_CHUNK if limit is None else min(EMBED_CHUNK, limit - written)
            step = self._next_chunk(tenant, subject, number, room if embedder.dims else 0)
            if not step.events:
                through = step.seen[0] if step.seen[1] == number else 0
                return Embedded(subject, number, written, through, step.high_water)
            vectors = _checked(embedder.embed([e.text for e in step.events]), embedder.dims)
            count = self._write_chunk(tenant, subject, number, step, vectors)
            written += count
            if embedded is not None and count:
                embedded(count)

    def _next_chunk(self, tenant: str, subject: str, number: int, room: int) -> _Chunk:
        """The next events to embed, read in one snapshot; erased ones are left out.

        A chunk of erased events only moves the watermark, and the next is read.
        """
        while True:
            with self._read() as tx:
                row = tx.one(
                    "SELECT high_water, vectors_through, vectors_embedder FROM clocks"
                    " WHERE tenant = ? AND subject = ?",
                    (tenant, subject),
                )
                if row is None:
                    raise NotFound(f"no subject {subject!r}", field="subject")
                high_water, through, current = (int(v) for v in row)
                start = through if current == number else 0
                upto = min(start + max(room, 0), high_water)
                events = SqlReader(tx, tenant).events(subject, after=start, through=upto)
                erased = _erased(tx, tenant, subject, [e.id for e in events])
            kept = tuple(e for e in events if e.id not in erased)
            if kept or upto <= start:
                return _Chunk((through, current), upto, high_water, kept)
            self._advance(tenant, subject, number, (through, current), upto)

    def _advance(
        self, tenant: str, subject: str, number: int, seen: tuple[int, int], upto: int
    ) -> bool:
        with self._write() as tx:
            return self._move_watermark(tx, tenant, subject, number, seen, upto)

    def _move_watermark(
        self, tx: Tx, tenant: str, subject: str, number: int, seen: tuple[int, int], upto: int
    ) -> bool:
        """Under the clock lock: move the watermark if it is still where the step saw it."""
        self._lock_clock(tx, tenant, subject)
        row = tx.one(
            "SELECT vectors_through, vectors_embedder FROM clocks WHERE tenant = ? AND subject = ?",
            (tenant, subject),
        )
        if (int(row[0]), int(row[1])) != seen:
            return False  # another run wrote this chunk meanwhile: read again
        tx.execute(
            "UPDATE clocks SET vectors_through = ?, vectors_embedder = ?"
            " WHERE tenant = ? AND subject = ?",
            (upto, number, tenant, subject),
        )
        return True

    def _write_chunk(
        self, tenant: str, subject: str, number: int, step: _Chunk, vectors: Vectors
    ) -> int:
        """Store a chunk's vectors, except for events erased since it was read."""
        with self._write() as tx:
            if not self._move_watermark(tx, tenant, subject, number, step.seen, step.upto):
                return 0
            erased = _erased(tx, tenant, subject, [e.id for e in step.events])
            rows = [
                (tenant, subject, e.seq, number, to_bytes(v))
                for e, v in zip(step.events, vectors, strict=True)
                if e.id not in erased
            ]
            if rows:
                tx.executemany(UPSERT, rows)
            return len(rows)

    def vectors(
        self, tenant: str, subject: str, ids: Sequence[str], embedder: EmbedderId | None = None
    ) -> dict[str, Vectors]:
        """The stored vectors of valid events ``ids`` (see ``SqlReader.vectors``)."""
        with self.reader(tenant) as reader:
            return reader.vectors(subject, ids, embedder)


def _checked(vectors: Vectors, dims: int) -> Vectors:
    """The embedder's vectors, if of the dimensions it declares: a stored row's length
    against them tells int8 from float16 (store/vector_rows.py)."""
    if vectors.ndim != 2 or vectors.shape[1] != dims:
        raise BadInput(
            f"the embedder gave vectors of {vectors.shape[-1]} dimensions, not the {dims}"
            " it declares",
            field="dims",
        )
    return vectors


def _erased(tx: Tx, tenant: str, subject: str, ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for chunk in chunks(ids):
        found.update(
            str(r[0])
            for r in tx.all(
                "SELECT event_id FROM erasures WHERE tenant = ? AND subject = ?"
                f" AND event_id IN ({marks(len(chunk))})",
                (tenant, subject, *chunk),
            )
        )
    return found
