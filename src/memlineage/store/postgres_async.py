"""PostgreSQL through psycopg's async connection pool: the same transactions, awaited.

``AsyncPostgresStore`` is :class:`PostgresStore` with another connection
source: every statement is awaited on the event loop (store/bridge.py), so a
task waiting for the server (a lock, a slow query) holds no thread and no
loop time. Its methods are called from :class:`memlineage.AsyncMemory`, which
runs them through the bridge; called from plain synchronous code they raise.

The pool is tied to the event loop that opens it: one ``AsyncMemory`` per loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memlineage.store.bridge import await_, entered, run_bridged
from memlineage.store.postgres import COPY_FROM_ROWS, PostgresStore, PostgresTx, _pg
from memlineage.store.sql import Statement, Tx


async def _begin_as(conn: psycopg.AsyncConnection[Any], read_only: bool) -> None:
    """As postgres._begin_as: the isolation named in the BEGIN itself."""
    level = psycopg.IsolationLevel.REPEATABLE_READ if read_only else None
    if conn.isolation_level != level:
        await conn.set_isolation_level(level)
    if conn.read_only != (read_only or None):
        await conn.set_read_only(read_only or None)


class FetchedRows:
    """A statement's rows, fetched at once: what the store reads of a cursor."""

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self.rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[Any]:
        return self.rows


class AsyncPostgresTx(PostgresTx):
    """PostgresTx's statements on an async connection, each awaited on the loop."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], loop: asyncio.AbstractEventLoop):
        self.aconn = conn
        self.loop = loop
        self.pipeline = None  # each statement is awaited with its rows (execute)

    def all_together(self, statements: Sequence[Statement]) -> list[list[Any]]:
        return Tx.all_together(self, statements)  # one after the other, each awaited

    def execute(self, sql: str, params: Sequence[Any] = ()) -> FetchedRows:
        cursor = await_(self.aconn.execute(_pg(sql), params), self.loop)
        rows = await_(cursor.fetchall(), self.loop) if cursor.description is not None else []
        return FetchedRows(rows, cursor.rowcount)

    def all_unprepared(
        self, sql: str, params: Sequence[Any] = (), *, binary: bool = False
    ) -> list[Any]:
        query = self.aconn.execute(_pg(sql), params, prepare=False, binary=binary)
        return list(await_(await_(query, self.loop).fetchall(), self.loop))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if len(rows) == 1:  # a pipeline costs more than it saves for one statement
            self.execute(sql, rows[0])
            return
        with entered(self.aconn.cursor(), self.loop) as cursor:
            await_(cursor.executemany(_pg(sql), rows), self.loop)

    def returning_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> list[Any]:
        if len(rows) == 1:
            return [self.one(sql, rows[0])]
        found = []  # one pipelined round trip, in order (as PostgresTx)
        with entered(self.aconn.cursor(), self.loop) as cursor:
            await_(cursor.executemany(_pg(sql), list(rows), returning=True), self.loop)
            for _ in rows:
                found.append(await_(cursor.fetchone(), self.loop))
                cursor.nextset()
        return found

    def insert_rows(self, table: str, columns: str, rows: Sequence[Sequence[Any]]) -> None:
        """COPY for a bulk import, INSERT for a few rows (as PostgresTx)."""
        if len(rows) < COPY_FROM_ROWS:
            super().insert_rows(table, columns, rows)
            return
        with (
            entered(self.aconn.cursor(), self.loop) as cursor,
            entered(cursor.copy(f"COPY {table} ({columns}) FROM STDIN"), self.loop) as copy,
        ):
            for row in rows:
                await_(copy.write_row(row), self.loop)


class AsyncPostgresStore(PostgresStore):
    """Every transaction of PostgresStore over an ``AsyncConnectionPool``; open with ``open``."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 4,
        connect_timeout: float | None = None,
        pool_timeout: float | None = None,
    ):
        """Nothing connects until ``open`` (a coroutine) runs on the loop that will use it."""
        self._options = self._settings(url, connect_timeout, pool_timeout)
        self._url = url
        self.apool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url,
            min_size=1,
            max_size=pool_size,
            open=False,
            timeout=self.pool_timeout,
            kwargs=self._options,
        )

    async def open(self, *, migrate: bool = True, create: bool = True) -> None:
        """Connect (the server's reason at once if it refuses), then migrate."""
        self.loop = asyncio.get_running_loop()
        try:
            first = await psycopg.AsyncConnection.connect(self._url, **self._options)
            await first.close()
            await self.apool.open(wait=True, timeout=self.connect_timeout)
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._refused(exc) from None
        if migrate:
            try:
                await run_bridged(lambda: self.migrate(create=create))
            except BaseException:
                await self.apool.close()
                raise

    @contextmanager
    def _transaction(self, read_only: bool, pipelined: bool = False) -> Iterator[Tx]:
        """A transaction whose statements are each awaited (``pipelined`` or not)."""
        with self._driver_errors(), entered(self.apool.connection(), self.loop) as conn:
            await_(_begin_as(conn, read_only), self.loop)
            with entered(conn.transaction(), self.loop):
                yield AsyncPostgresTx(conn, self.loop)

    # PostgresStore's one-statement paths use the pool's autocommit connections; here
    # every statement is awaited in a transaction (no round trip to save on the loop).
    def _read_once(self, sql: str, params: Sequence[Any]) -> list[Any]:
        with self._read() as tx:
            found: list[Any] = tx.all(sql, params)
        return found

    def _write_once(self, sql: str, params: Sequence[Any]) -> list[Any]:
        with self._write() as tx:
            found: list[Any] = tx.all(sql, params)
        return found

    def _one_statement(self, read_only: bool = False) -> Any:
        return self._transaction(read_only)

    def _read_together(self, statements: Sequence[Statement]) -> list[list[Any]]:
        with self._read() as tx:  # each statement awaited (no pipeline here)
            together: list[list[Any]] = tx.all_together(statements)
        return together

    def close(self) -> None:
        await_(self.apool.close(), self.loop)

    def parallelism(self) -> int:
        return int(self.apool.max_size)
