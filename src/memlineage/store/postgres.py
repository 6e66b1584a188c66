"""PostgreSQL through psycopg 3 and a connection pool, at READ COMMITTED.

Writers take the subject's clock row lock with an UPDATE as their first
statement (I7); at READ COMMITTED every later statement then sees all that
committed before the lock was granted. Readers use REPEATABLE READ so that
several statements see one snapshot.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from ..errors import StoreError
from .base import SqlStore
from .sql import Tx

# One advisory lock key for "migrating memlineage's schema" (any stable number).
MIGRATION_LOCK_KEY = 0x6D656D6C


@functools.lru_cache(maxsize=512)
def _pg(sql: str) -> str:
    """Statements are written with ``?``; psycopg wants ``%s`` (our SQL has no literal %)."""
    return sql.replace("?", "%s")


class PostgresTx(Tx):
    def __init__(self, conn: psycopg.Connection[Any]):
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(_pg(sql), params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(_pg(sql), list(rows))


class PostgresStore(SqlStore):
    dialect = "postgres"
    integrity_errors = (psycopg.errors.UniqueViolation,)
    # JIT compilation of an over-estimated recursion can cost more than the query itself.
    descendants_prelude = "SET LOCAL jit = off"
    # now(): the transaction's start, stable within it, so the claim can use its index.
    now_sql = "CAST(EXTRACT(EPOCH FROM now()) AS DOUBLE PRECISION)"
    # Workers on many machines: each claim skips the rows another one holds.
    claim_lock = " FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str, *, migrate: bool = True, pool_size: int = 4):
        self.url = url
        try:
            self.pool = ConnectionPool(
                url,
                min_size=1,
                max_size=pool_size,
                open=True,
                timeout=30,
                kwargs={"autocommit": True},  # transactions are explicit blocks
            )
            self.pool.wait(timeout=10)
        except (psycopg.Error, Exception) as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {_redact(url)}: {exc}") from exc
        if migrate:
            self.migrate()

    @contextmanager
    def _transaction(self, first: str | None) -> Iterator[Tx]:
        with self.pool.connection() as conn, conn.transaction():
            if first:
                conn.execute(first)
            yield PostgresTx(conn)

    def _write(self) -> Any:
        return self._transaction(None)

    def _read(self) -> Any:
        return self._transaction("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")

    def _lock_for_migration(self, tx: Tx) -> None:
        tx.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK_KEY,))

    def _has_table(self, tx: Tx, name: str) -> bool:
        # to_regclass resolves the name along search_path, as every other statement does.
        return bool(tx.one("SELECT to_regclass(?) IS NOT NULL", (name,))[0])

    def close(self) -> None:
        self.pool.close()


def _redact(url: str) -> str:
    """The URL without a password, for error messages."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}@{host}"
    return url
