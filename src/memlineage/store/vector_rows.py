"""Stored event vectors: their bytes, and the rows recall reads (docs/recall.md).

A vector is stored as int8, one byte a dimension (256 at 256 dimensions),
scaled by its own largest absolute component: ``q = round(127 * v / max|v|)``.
Read back, each row is made a unit vector again, so a dot product is still a
cosine: recall only ranks by it, and the rounding moves a cosine by at most
0.0026 over LoCoMo (bench/bench_vector_precision.py; docs/recall.md, "Storage").

Stores written before schema 15 hold float16 rows (2 bytes a dimension). A row
says which it is by its length against the dimensions its embedder records, so
an old row is never misread; schema 15 rewinds the embedding job of the
built-in model's subjects, which rewrites their old rows as int8 (recall reads
the old ones meanwhile); another embedder's rows stay float16.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memlineage.model import Event
from memlineage.recall.embed import EmbedderId, Vectors
from memlineage.store.rows import EVENT_COLUMNS, event_from_row
from memlineage.store.sql import Tx

STORED = np.int8
OLD = np.dtype("<f2")  # before schema 15


def to_bytes(vector: Vectors) -> bytes:
    """One byte a dimension; the zero vector stays zero."""
    v = np.asarray(vector, dtype=np.float32)
    largest = float(np.max(np.abs(v))) if v.size else 0.0
    if largest == 0.0:
        return np.zeros(v.shape, dtype=STORED).tobytes()
    scaled: npt.NDArray[np.int8] = np.rint(v * (127.0 / largest)).astype(STORED)
    return scaled.tobytes()


def from_bytes(data: bytes | memoryview, dims: int) -> Vectors:
    """The float32 vector of a row of an embedder of ``dims`` dimensions."""
    row: Vectors = decode([bytes(data)], dims)[0]
    return row


def decode(blobs: Sequence[bytes], dims: int) -> Vectors:
    """The rows' vectors as one float32 matrix (row n: ``blobs[n]``); an int8 row is
    made a unit vector again, a float16 one (before schema 15) is read as it was.

    One conversion of all the rows when they are all int8 (a recall reads a
    hundred): the usual case once the job has rewritten the old ones.
    """
    if all(len(b) == dims for b in blobs):
        return _unit(np.frombuffer(b"".join(blobs), dtype=STORED).reshape(len(blobs), dims))
    return np.stack([_row(b, dims) for b in blobs]) if blobs else _empty()


def _row(blob: bytes, dims: int) -> Vectors:
    if len(blob) == dims:
        return _unit(np.frombuffer(blob, dtype=STORED).reshape(1, dims)).reshape(dims)
    if len(blob) == OLD.itemsize * dims:
        return np.frombuffer(blob, dtype=OLD).astype(np.float32)
    raise ValueError(f"a stored vector of {len(blob)} bytes for {dims} dimensions")


def _unit(rows: npt.NDArray[np.int8]) -> Vectors:
    """The int8 rows as float32 rows of length 1 (a zero row stays zero)."""
    matrix: Vectors = rows.astype(np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    matrix /= norms
    return matrix


def _empty() -> Vectors:
    return np.zeros((0, 0), dtype=np.float32)


def current_embedder(tx: Tx, tenant: str) -> tuple[int, EmbedderId] | None:
    """The tenant's embedder: its number and identity (None: never set)."""
    row = tx.one(
        "SELECT version, model, model_version, dims FROM embedders WHERE tenant = ?"
        " ORDER BY version DESC LIMIT 1",
        (tenant,),
    )
    if row is None:
        return None
    return int(row[0]), EmbedderId(str(row[1]), str(row[2]), int(row[3]))


def stored_vectors(
    tx: Tx, tenant: str, subject: str, ids: Sequence[str], embedder: EmbedderId | None = None
) -> list[tuple[Event, Vectors]]:
    """The events among ``ids`` that have a vector of ``embedder`` (default: the tenant's
    current one), with it; valid or not (the reader keeps the valid ones)."""
    embedder = _resolved(tx, tenant, embedder)
    rows = _vector_rows(tx, tenant, subject, ids, embedder, _prefixed(EVENT_COLUMNS))
    if not rows or embedder is None:
        return []
    matrix = decode([bytes(row[-1]) for row in rows], embedder.dims)
    return [(event_from_row(row[:-1]), vector) for row, vector in zip(rows, matrix, strict=True)]


def vector_matrix(
    tx: Tx, tenant: str, subject: str, ids: Sequence[str], embedder: EmbedderId | None = None
) -> tuple[list[str], Vectors]:
    """The ids that have a vector of ``embedder`` (default: the current one), and those
    vectors as the rows of one float32 matrix, in the same order; the events
    themselves are not read (the caller knows they are valid).

    One conversion of all the rows' bytes, not one per row: a recall reads a
    hundred vectors.
    """
    embedder = _resolved(tx, tenant, embedder)
    rows = _vector_rows(tx, tenant, subject, ids, embedder, "e.id")
    if not rows or embedder is None:
        return [], _empty()
    return [str(row[0]) for row in rows], decode([bytes(row[1]) for row in rows], embedder.dims)


def _vector_rows(
    tx: Tx,
    tenant: str,
    subject: str,
    ids: Sequence[str],
    embedder: EmbedderId | None,  # resolved by the caller: its dims read the bytes
    columns: str,
) -> list[Any]:
    """``columns`` of the events among ``ids``, then their vector of ``embedder``.

    The embedder's numbers are found by the statement itself (a subquery): one
    round trip, not two. Unprepared: the rows' order is the plan's, and a recall
    multiplies them as one matrix, whose products depend on the rows' positions.
    """
    if embedder is None or embedder.dims == 0 or not ids:
        return []
    found: list[Any] = []
    for condition, params in tx.where_in("e.id", list(dict.fromkeys(ids))):
        found += tx.all_unprepared(
            f"SELECT {columns}, v.vector FROM events e JOIN event_vectors v"
            " ON v.tenant = e.tenant AND v.subject = e.subject AND v.seq = e.seq"
            f" WHERE e.tenant = ? AND e.subject = ? AND {condition}"
            " AND v.embedder IN (SELECT version FROM embedders WHERE tenant = ? AND model = ?"
            " AND model_version = ? AND dims = ?)",
            (
                tenant,
                subject,
                *params,
                tenant,
                embedder.name,
                embedder.version,
                embedder.dims,
            ),
            binary=True,
        )
    return found


def _resolved(tx: Tx, tenant: str, embedder: EmbedderId | None) -> EmbedderId | None:
    """``embedder``, or the tenant's current one (None: never set)."""
    if embedder is not None:
        return embedder
    current = current_embedder(tx, tenant)
    return None if current is None else current[1]


def _prefixed(columns: str) -> str:
    """``EVENT_COLUMNS`` qualified with the events table's alias ``e``."""
    return ", ".join(f"e.{c.strip()}" for c in columns.split(","))
