"""Stored event vectors: their bytes, and the rows recall reads (docs/recall.md).

A vector is stored as float16, little-endian: 2 bytes a dimension (512 at 256
dimensions). The recall compares unit vectors whose cosines it only ranks;
float16's 11 bits of mantissa change a cosine by less than 0.001.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memlineage.model import Event
from memlineage.recall.embed import EmbedderId, Vectors
from memlineage.store.rows import EVENT_COLUMNS, event_from_row
from memlineage.store.sql import Tx

STORED = np.dtype("<f2")


def to_bytes(vector: Vectors) -> bytes:
    return np.asarray(vector, dtype=STORED).tobytes()


def from_bytes(data: bytes | memoryview) -> Vectors:
    return np.frombuffer(bytes(data), dtype=STORED).astype(np.float32)


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
    rows = _vector_rows(tx, tenant, subject, ids, embedder, _prefixed(EVENT_COLUMNS))
    return [(event_from_row(row[:-1]), from_bytes(row[-1])) for row in rows]


def vector_matrix(
    tx: Tx, tenant: str, subject: str, ids: Sequence[str], embedder: EmbedderId | None = None
) -> tuple[list[str], Vectors]:
    """The ids that have a vector of ``embedder`` (default: the current one), and those
    vectors as the rows of one float32 matrix, in the same order; the events
    themselves are not read (the caller knows they are valid).

    One conversion of all the rows' bytes, not one per row: a recall reads a
    hundred vectors.
    """
    rows = _vector_rows(tx, tenant, subject, ids, embedder, "e.id")
    if not rows:
        return [], np.zeros((0, 0), dtype=np.float32)
    data = b"".join(bytes(row[1]) for row in rows)
    matrix = np.frombuffer(data, dtype=STORED).reshape(len(rows), -1).astype(np.float32)
    return [str(row[0]) for row in rows], matrix


def _vector_rows(
    tx: Tx,
    tenant: str,
    subject: str,
    ids: Sequence[str],
    embedder: EmbedderId | None,
    columns: str,
) -> list[Any]:
    """``columns`` of the events among ``ids``, then their vector of ``embedder``.

    The embedder's numbers are found by the statement itself (a subquery): one
    round trip, not two. Unprepared: the rows' order is the plan's, and a recall
    multiplies them as one matrix, whose products depend on the rows' positions.
    """
    if embedder is None:
        current = current_embedder(tx, tenant)
        if current is None:
            return []
        embedder = current[1]
    if embedder.dims == 0 or not ids:
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


def _prefixed(columns: str) -> str:
    """``EVENT_COLUMNS`` qualified with the events table's alias ``e``."""
    return ", ".join(f"e.{c.strip()}" for c in columns.split(","))
