"""The SQL seam: a transaction handle that both backends implement, and small helpers."""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
Statement = tuple[str, Sequence[Any]]  # SQL with ``?`` placeholders, and its parameters
IN_CHUNK = 500  # ids per IN (...) list: far below SQLite's and PostgreSQL's limits


class Tx(abc.ABC):
    """One open transaction; statements use ``?`` placeholders on every backend."""

    @abc.abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...

    @abc.abstractmethod
    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def insert_rows(self, table: str, columns: str, rows: Sequence[Sequence[Any]]) -> None:
        """Insert many rows into ``table`` (``columns``: its column list) in one go."""
        count = len(columns.split(","))
        self.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks(count)})", rows)

    def returning_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> list[Any]:
        """The one row ``sql`` returns for each of ``rows``, run in their order.

        PostgreSQL sends them all in one round trip (a pipeline), still in order.
        """
        return [self.one(sql, row) for row in rows]

    def all_together(self, statements: Sequence[Statement]) -> list[list[Any]]:
        """Every row of each of ``statements``, run in their order.

        PostgreSQL sends them in one round trip (a pipeline): a statement cannot
        use the rows of an earlier one, only its effects.
        """
        return [self.all(sql, params) for sql, params in statements]

    @contextmanager
    def writes_together(self) -> Iterator[Tx]:
        """This transaction, where PostgreSQL's pipeline sends plain inserts and updates
        as few statements (``MergedWrites``); every statement runs by the block's end."""
        yield self

    def where_in(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
        """``column`` among ``values`` as (condition, parameters), one pair per statement.

        SQLite: ``IN (?, ...)`` lists of IN_CHUNK values; PostgreSQL overrides it
        with one ``= ANY(?)`` array, whose statement text does not depend on the count.
        """
        for chunk in chunks(values):
            yield f"{column} IN ({marks(len(chunk))})", list(chunk)

    def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return list(self.execute(sql, params).fetchall())

    def all_unprepared(
        self, sql: str, params: Sequence[Any] = (), *, binary: bool = False
    ) -> list[Any]:
        """``all``, planned for these values every time (PostgreSQL: never the generic
        plan of a prepared statement), for a statement whose rows come in the order
        of its plan: a ``where_in`` array is then planned as an IN list of the same
        values is, so the rows come in the same order. ``binary``: rows in the
        driver's binary format where it has one (PostgreSQL's bytea as bytes, not
        hex text); the same values either way."""
        return self.all(sql, params)

    def count(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self.execute(sql, params).rowcount)


def chunks(values: Sequence[T], size: int = IN_CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def marks(n: int) -> str:
    return ", ".join("?" * n)
