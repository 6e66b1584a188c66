"""Reads of one tenant inside one snapshot (the store opens the transaction)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memlineage.meaning import extract
from memlineage.model import Alias, Artifact, Clock, Event, Operation, OpKind
from memlineage.raw.validity import DEFAULT_POLICY, TrustPolicy, source_state
from memlineage.recall.embed import EmbedderId, Vectors
from memlineage.store.protocol import Head, HeadState, RecallRead, StoredKinds
from memlineage.store.rows import (
    ARTIFACT_COLUMNS,
    ARTIFACTS,
    EVENT_COLUMNS,
    OP_COLUMNS,
    artifact_columns,
    artifact_from_row,
    event_from_row,
    op_from_row,
)
from memlineage.store.search import Match, TextSearch
from memlineage.store.sql import Statement, Tx, chunks, marks
from memlineage.store.vector_rows import current_embedder, stored_vectors, vector_matrix

# ARTIFACT_COLUMNS as head() reads them, from its LEFT JOINs (``r`` and its status ``rs``).
_HEAD_ARTIFACT = artifact_columns(row="r", status="rs")
_HEAD_NO_OUTPUT = artifact_columns(output=False, row="r", status="rs")
_ARTIFACT_WIDTH = len(ARTIFACT_COLUMNS.split(","))


def head_from_row(row: Sequence[Any]) -> Head:
    """A row of ``SqlReader.head_statement`` (its extra columns, if any, left aside)."""
    high_water, epoch, artifact_id, source_epoch, covers, bypassed = row[:6]
    alias = Alias(artifact_id, int(source_epoch), int(covers), bool(bypassed))
    cells = row[6 : 6 + _ARTIFACT_WIDTH]
    artifact = artifact_from_row(cells) if artifact_id and cells[0] is not None else None
    return Head(Clock(int(high_water), int(epoch)), alias, artifact)


def head_statement(tenant: str, subject: str, extra: str = "", *, output: bool = True) -> Statement:
    """``SqlReader.head``'s statement; ``extra``: more columns of the clock ``c``, last.
    ``output=False`` leaves the artifact's output unread (``None``)."""
    columns = _HEAD_ARTIFACT if output else _HEAD_NO_OUTPUT
    return (
        "SELECT c.high_water, c.epoch, a.artifact_id, a.source_epoch, a.covers_through,"
        f" a.bypassed, {columns}{extra} FROM clocks c JOIN aliases a"
        " ON a.tenant = c.tenant AND a.subject = c.subject"
        " LEFT JOIN artifacts r ON r.tenant = a.tenant AND r.id = a.artifact_id"
        " AND r.subject = a.subject"
        " LEFT JOIN artifact_status rs ON rs.tenant = r.tenant AND rs.subject = r.subject"
        " AND rs.id = r.id"
        " WHERE c.tenant = ? AND c.subject = ?",
        (tenant, subject),
    )


def events_statement(
    tenant: str, subject: str, after: int = 0, through: int | None = None
) -> Statement:
    """``SqlReader.events``'s statement: the subject's events after ``after``, in seq order."""
    sql = f"SELECT {EVENT_COLUMNS} FROM events WHERE tenant = ? AND subject = ? AND seq > ?"
    params: list[Any] = [tenant, subject, after]
    if through is not None:
        sql += " AND seq <= ?"
        params.append(through)
    return sql + " ORDER BY seq", params


def head_state_statement(tenant: str, subject: str) -> Statement:
    """``SqlReader.head_state``'s statement."""
    return (
        "SELECT c.high_water, c.epoch, c.ops, a.artifact_id, a.source_epoch,"
        " a.covers_through, a.bypassed, s.status, s.reason FROM clocks c JOIN aliases a"
        " ON a.tenant = c.tenant AND a.subject = c.subject"
        " LEFT JOIN artifact_status s ON s.tenant = a.tenant AND s.subject = a.subject"
        " AND s.id = a.artifact_id"
        " WHERE c.tenant = ? AND c.subject = ?",
        (tenant, subject),
    )


def head_state_from_rows(rows: Sequence[Sequence[Any]]) -> HeadState | None:
    """The rows of ``head_state_statement`` (one, or none: no such subject)."""
    if not rows:
        return None
    high_water, epoch, ops, artifact_id, source_epoch, covers, bypassed, status, why = rows[0]
    alias = Alias(artifact_id, int(source_epoch), int(covers), bool(bypassed))
    return HeadState(Clock(int(high_water), int(epoch)), alias, int(ops), status, why)


def kinds_statement(tenant: str, subject: str, after: int, seqs: Sequence[int] = ()) -> Statement:
    """The watermark and the kinds rows after ``after`` (of ``seqs`` only, when given).

    The clock row comes back even without a kinds row (the LEFT JOIN), with
    the watermark; none comes back when the kinds are of other rules.
    """
    only = f" AND k.seq IN ({marks(len(seqs))})" if seqs else ""
    return (
        "SELECT c.kinds_through, k.seq, k.kinds FROM clocks c LEFT JOIN event_kinds k"
        " ON k.tenant = c.tenant AND k.subject = c.subject AND k.seq > ?"
        f" AND k.seq <= c.kinds_through{only}"
        " WHERE c.tenant = ? AND c.subject = ? AND c.kinds_rules = ?",
        (after, *seqs, tenant, subject, extract.RULES_VERSION),
    )


def kinds_from_rows(rows: Sequence[Sequence[Any]]) -> StoredKinds:
    """The rows of ``kinds_statement`` as the watermark and each seq's kinds."""
    if not rows:
        return StoredKinds(0, {})
    kinds = {int(seq): tuple(text.split(",")) for _, seq, text in rows if seq is not None}
    return StoredKinds(int(rows[0][0]), kinds)


def operations_follow_on(operations: Sequence[Operation], after: int, through: int) -> bool:
    """Whether ``operations``, read as those numbered after ``after``, are every one up to
    the clock's counter ``through`` and none an erasure: then what was read of the
    subject before them (events, their fold) still holds, continued by them. False: not
    the operations this process read before these (another database behind the same
    store object), or an erasure rewrote rows; read the subject whole."""
    if [op.op_seq for op in operations] != list(range(after + 1, through + 1)):
        return False
    return not any(op.kind is OpKind.ERASE for op in operations)


def operations_statement(tenant: str, subject: str, after: int = 0) -> Statement:
    """``SqlReader.operations``'s statement: the subject's operations in order (those
    numbered after ``after``)."""
    return (
        f"SELECT {OP_COLUMNS} FROM operations WHERE tenant = ? AND subject = ? AND op_seq > ?"
        " ORDER BY op_seq",
        (tenant, subject, after),
    )


class SqlReader:
    """Reads of one tenant inside one snapshot."""

    def __init__(
        self,
        tx: Tx,
        tenant: str,
        text_search: TextSearch | None = None,
        policy: TrustPolicy = DEFAULT_POLICY,
        scope: object | None = None,
    ):
        self.tx = tx
        self.tenant = tenant
        self.text_search = text_search
        self.policy = policy  # the store's, for the validity check of vectors()
        self.scope = scope  # the store, whose reads recall keeps per process (recall/kept.py)

    def search(self, subject: str, terms: list[str]) -> list[Match]:
        """The ids of the subject's events that match any of ``terms``, with the
        engine's relevance (FTS5 ``bm25()``, ``ts_rank_cd``).

        Every event that matches is returned, valid or not: the caller keeps only
        those the raw layer's rules hold valid in this same snapshot.
        """
        return self._text_search().search(self.tx, self.tenant, subject, terms)

    def matching(self, subject: str, terms: list[str]) -> list[str]:
        """The ids of the subject's events that match any of ``terms``, unranked
        (what recall ranks itself, relevance.py); valid or not, as ``search``."""
        return self._text_search().matching(self.tx, self.tenant, subject, terms)

    def _text_search(self) -> TextSearch:
        if self.text_search is None:
            raise TypeError("this reader was opened without a full-text search")
        return self.text_search

    def stored_kinds(
        self, subject: str, *, after: int = 0, seqs: Sequence[int] | None = None
    ) -> StoredKinds:
        """The item kinds stored for the subject's events after ``after``; only those of
        ``seqs`` when given (a read that follows the events asked about, not the
        subject's history)."""
        if seqs is None:
            return self._kinds(subject, after, ())
        wanted = sorted(set(seqs))
        if not wanted:
            return StoredKinds(0, {})
        through, kinds = 0, {}
        for chunk in chunks(wanted):
            part = self._kinds(subject, after, chunk)
            through = part.through  # the same clock row in every chunk
            kinds.update(part.kinds)
        return StoredKinds(through, kinds)

    def _kinds(self, subject: str, after: int, seqs: Sequence[int]) -> StoredKinds:
        return kinds_from_rows(self.tx.all(*kinds_statement(self.tenant, subject, after, seqs)))

    def recall_read(
        self, subject: str, *, events_after: int | None, kinds: bool, terms: Sequence[str]
    ) -> RecallRead:
        """The head's state and, guessed from the last recall, the events after
        ``events_after`` (with their stored kinds when ``kinds``) and the ids of the
        events matching ``terms`` (when any): one round trip on PostgreSQL. A guess
        the state belies is read again by the caller, in this same snapshot."""
        statements = [head_state_statement(self.tenant, subject)]
        if events_after is not None:
            statements.append(events_statement(self.tenant, subject, events_after))
            if kinds:
                statements.append(kinds_statement(self.tenant, subject, events_after))
        if terms:
            statements.append(self._text_search().matching_statement(self.tenant, subject, terms))
        found = iter(self.tx.all_together(statements))
        state = head_state_from_rows(next(found))
        events = stored = None
        if events_after is not None:
            events = [event_from_row(r) for r in next(found)]
            stored = kinds_from_rows(next(found)) if kinds else None
        matching = [r[0] for r in next(found)] if terms else None
        return RecallRead(state, events, stored, matching)

    def head(self, subject: str) -> Head | None:
        """Clock, alias and the alias's artifact (of this subject), in one statement."""
        row = self.tx.one(*head_statement(self.tenant, subject))
        return head_from_row(row) if row is not None else None

    def head_state(self, subject: str) -> HeadState | None:
        """Clock, alias, operation counter and the alias's artifact's status, in one
        statement that reads no manifest, output or gate."""
        return head_state_from_rows(self.tx.all(*head_state_statement(self.tenant, subject)))

    def events(self, subject: str, *, after: int = 0, through: int | None = None) -> list[Event]:
        return [
            event_from_row(r)
            for r in self.tx.all(*events_statement(self.tenant, subject, after, through))
        ]

    def events_by_id(self, subject: str, ids: Sequence[str]) -> list[Event]:
        return self._events_where(subject, "id", ids)

    def events_by_seq(self, subject: str, seqs: Sequence[int]) -> list[Event]:
        return self._events_where(subject, "seq", seqs)

    def _events_where(self, subject: str, column: str, values: Sequence[Any]) -> list[Event]:
        """The subject's events whose ``column`` (id or seq) is one of ``values``.

        PostgreSQL takes the values as one array, so the statement's text does not
        change with their number (converted once by the driver), planned for them
        as their IN list was (the rows' order, which some callers keep, is the
        plan's); SQLite as IN lists.
        """
        found: list[Event] = []
        for condition, params in self.tx.where_in(column, values):
            found.extend(
                event_from_row(r)
                for r in self.tx.all_unprepared(
                    f"SELECT {EVENT_COLUMNS} FROM events WHERE tenant = ? AND subject = ?"
                    f" AND {condition}",
                    (self.tenant, subject, *params),
                )
            )
        return found

    def alias(self, subject: str) -> Alias:
        row = self.tx.one(
            "SELECT artifact_id, source_epoch, covers_through, bypassed FROM aliases"
            " WHERE tenant = ? AND subject = ?",
            (self.tenant, subject),
        )
        return Alias(row[0], int(row[1]), int(row[2]), bool(row[3]))

    def operations(self, subject: str, *, after: int = 0) -> list[Operation]:
        """The subject's operations in order (those numbered after ``after``)."""
        statement = operations_statement(self.tenant, subject, after)
        return [op_from_row(r) for r in self.tx.all(*statement)]

    def artifact(
        self, artifact_id: str, subject: str | None = None, *, output: bool = True
    ) -> Artifact | None:
        """One artifact; ``output=False`` leaves its output unread (``None``): the switch
        validates the manifest only, and the output is what grows with the subject."""
        columns = artifact_columns(output=output)
        sql = f"SELECT {columns} FROM {ARTIFACTS} WHERE a.tenant = ? AND a.id = ?"
        params: list[Any] = [self.tenant, artifact_id]
        if subject is not None:
            sql += " AND a.subject = ?"
            params.append(subject)
        row = self.tx.one(sql, params)
        return artifact_from_row(row) if row else None

    def artifacts(self, subject: str | None = None) -> list[Artifact]:
        sql = f"SELECT {ARTIFACT_COLUMNS} FROM {ARTIFACTS} WHERE a.tenant = ?"
        params: list[Any] = [self.tenant]
        if subject is not None:
            sql += " AND a.subject = ?"
            params.append(subject)
        order = " ORDER BY a.created_at, a.id"
        return [artifact_from_row(r) for r in self.tx.all(sql + order, params)]

    def subjects(self) -> list[str]:
        rows = self.tx.all(
            "SELECT subject FROM clocks WHERE tenant = ? ORDER BY subject", (self.tenant,)
        )
        return [r[0] for r in rows]

    def subjects_of_events(self, ids: Sequence[str]) -> dict[str, str]:
        """The subject of each of ``ids`` that names an event of this tenant."""
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(ids))
        for chunk in chunks(unique):
            for event_id, subject in self.tx.all(
                f"SELECT id, subject FROM events WHERE tenant = ? AND id IN ({marks(len(chunk))})",
                (self.tenant, *chunk),
            ):
                found[str(event_id)] = str(subject)
        return found

    def embedder(self) -> tuple[int, EmbedderId] | None:
        """The tenant's current embedder in this snapshot: its number and identity."""
        return current_embedder(self.tx, self.tenant)

    def vectors_of_valid(
        self, subject: str, ids: Sequence[str], embedder: EmbedderId | None = None
    ) -> tuple[list[str], Vectors]:
        """:meth:`vectors` for ids the caller read as valid in this snapshot (a recall's
        candidates), as the ids that have one and their rows of one matrix: validity
        is not decided again, so the events are not read."""
        return vector_matrix(self.tx, self.tenant, subject, ids, embedder)

    def vectors(
        self, subject: str, ids: Sequence[str], embedder: EmbedderId | None = None
    ) -> dict[str, Vectors]:
        """The stored vectors of those of ``ids`` that are valid events of the subject in
        this snapshot, computed by ``embedder`` (default: the tenant's current one).

        An event without one (not embedded yet, or by another embedder) is left
        out: recall ranks it by its words. Invalid events never come back.
        """
        found = stored_vectors(self.tx, self.tenant, subject, ids, embedder)
        if not found:
            return {}
        state = source_state([e for e, _ in found], self.operations(subject), self.policy)
        return {e.id: vector for e, vector in found if state.is_valid(e)}
