"""The embedded default: SQLite through the stdlib driver.

WAL lets readers run beside the one writer; every writer opens with
BEGIN IMMEDIATE, so the write lock is its first statement (I7), and waits up
to the busy timeout for it. Concurrent writers are processes.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .base import SqlStore
from .sql import Tx

BUSY_TIMEOUT_MS = 30_000


class SqliteTx(Tx):
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self.conn.executemany(sql, rows)


class SqliteStore(SqlStore):
    dialect = "sqlite"
    integrity_errors = (sqlite3.IntegrityError,)
    now_sql = "((julianday('now') - 2440587.5) * 86400.0)"

    def __init__(self, path: str | Path, *, migrate: bool = True):
        self.path = str(path)
        self._connection_mutex = threading.RLock()
        self.url = f"sqlite:///{self.path}"
        try:
            self.conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                timeout=BUSY_TIMEOUT_MS / 1000,
                check_same_thread=False,
            )
            self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode survives a killed process; only power loss can drop the
            # last transactions, never corrupt the file.
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {self.path!r}: {exc}") from exc
        if migrate:
            self.migrate()

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[Tx]:
        # One connection serves this store; the mutex keeps two threads from sharing
        # one transaction. Isolation between processes is SQLite's own write lock.
        with self._connection_mutex:
            self.conn.execute(begin)
            try:
                yield SqliteTx(self.conn)
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def _write(self) -> Any:
        return self._transaction("BEGIN IMMEDIATE")

    def _read(self) -> Any:
        # A deferred transaction reads one WAL snapshot from its first SELECT on.
        return self._transaction("BEGIN")

    def _lock_for_migration(self, tx: Tx) -> None:
        """BEGIN IMMEDIATE already excludes every other writer."""

    def _has_table(self, tx: Tx, name: str) -> bool:
        row = tx.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return row is not None

    def close(self) -> None:
        self.conn.close()
