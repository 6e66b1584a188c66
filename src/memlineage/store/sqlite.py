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

from memlineage.errors import StoreError
from memlineage.store.base import SqlStore
from memlineage.store.search import Fts5Search
from memlineage.store.sql import Tx

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
    text_search = Fts5Search()
    ops_by_id_range = True  # ids compare by code point (BINARY), on operations' indexes too

    def __init__(
        self,
        path: str | Path,
        *,
        migrate: bool = True,
        create: bool = True,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        read_only: bool = False,
    ):
        self.path = str(path)
        self._connection_mutex = threading.RLock()
        self.url = f"sqlite:///{self.path}"
        self.busy_timeout_ms = busy_timeout_ms
        if not create and not Path(self.path).is_file():
            raise StoreError(f"no memlineage database at {self.path}")
        try:
            target = f"file:{Path(self.path).resolve()}?mode=ro" if read_only else self.path
            self.conn = sqlite3.connect(
                target,
                isolation_level=None,
                timeout=busy_timeout_ms / 1000,
                check_same_thread=False,
                uri=read_only,
            )
            self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            if not read_only:
                self.conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode survives a killed process; only power loss can drop the
            # last transactions, never corrupt the file.
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = ON")
            # Freed space is zeroed, so an erased text leaves no copy in the file (erase.py).
            self.conn.execute("PRAGMA secure_delete = ON")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {self.path}: {exc}") from exc
        if migrate:
            self.migrate(create=create)

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[Tx]:
        # One connection serves this store; the mutex keeps two threads from sharing
        # one transaction. Isolation between processes is SQLite's own write lock.
        with self._connection_mutex, self._driver_errors():
            self.conn.execute(begin)
            try:
                yield SqliteTx(self.conn)
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    @contextmanager
    def _driver_errors(self) -> Iterator[None]:
        """sqlite3's operational errors as one line that names the database (exit 2).

        IntegrityError passes: the append retries it under the lock.
        """
        try:
            yield
        except sqlite3.IntegrityError:
            raise
        except sqlite3.OperationalError as exc:
            raise StoreError(f"SQLite database {self.path}: {_explain(exc, self)}") from exc
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"SQLite database {self.path}: {exc}") from exc

    def _write(self) -> Any:
        return self._transaction("BEGIN IMMEDIATE")

    def _read(self) -> Any:
        # A deferred transaction reads one WAL snapshot from its first SELECT on.
        return self._transaction("BEGIN")

    def _read_once(self, sql: str, params: Sequence[Any]) -> list[Any]:
        with self._connection_mutex, self._driver_errors():  # autocommit: no BEGIN, COMMIT
            return self.conn.execute(sql, params).fetchall()

    def _lock_for_migration(self, tx: Tx) -> None:
        """BEGIN IMMEDIATE already excludes every other writer."""

    def _table_names(self, tx: Tx) -> set[str]:
        return {r[0] for r in tx.all("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _purge_erased(self) -> bool:
        """Merge the full-text index, then copy the WAL into the database and truncate it.

        FTS5 deletes by appending delete markers: the erased terms stay in older
        segments until they merge. ``optimize`` merges every segment into one (a cost
        linear in the index); ``secure_delete`` zeroes the pages it frees; the
        checkpoint leaves no old frame in the WAL. Returns False when any of it could
        not finish (a reader of another connection kept the checkpoint from
        completing, a full disk): the erasure itself is committed either way, and
        ``erase`` may be run again to purge.
        """
        try:
            with self._connection_mutex:
                self._merge_full_text()
                busy, _log, _done = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error:
            return False
        return int(busy) == 0

    def _merge_full_text(self, *statements: str) -> None:
        """FTS5's segments merged into one, and ``statements`` after, in one write."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            self.conn.execute("INSERT INTO events_fts (events_fts) VALUES ('optimize')")
            for statement in statements:
                self.conn.execute(statement)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def optimize(self) -> list[str]:
        """The full-text index merged into one segment (a recall's cold lookup reads each
        segment: docs/recall.md), and the planner's statistics refreshed."""
        with self._connection_mutex:
            self._merge_full_text("PRAGMA optimize")
        return ["full-text index merged into one segment", "planner statistics refreshed"]

    def close(self) -> None:
        self.conn.close()

    def parallelism(self) -> int:
        return 1  # one connection, one transaction at a time (the mutex above)

    def discard(self) -> None:
        """Close, and remove the database file: for a store its opener just created and
        nothing was written to (a refused first ``add`` leaves no trace)."""
        self.close()
        for name in (self.path, f"{self.path}-wal", f"{self.path}-shm"):
            Path(name).unlink(missing_ok=True)


def _explain(exc: sqlite3.OperationalError, store: SqliteStore) -> str:
    message = str(exc)
    if "locked" in message or "busy" in message:
        return (
            f"{message}: another process held the write lock longer than the busy timeout"
            f" ({store.busy_timeout_ms / 1000:g} s); nothing was changed, retry later"
        )
    if "readonly" in message or "read-only" in message:
        return f"{message}: the file or its folder is read-only; nothing was changed"
    return message
