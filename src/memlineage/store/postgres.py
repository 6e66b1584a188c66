"""PostgreSQL through psycopg 3 and a connection pool, at READ COMMITTED.

Writers take the subject's clock row lock with an UPDATE as their first
statement (I7); at READ COMMITTED every later statement then sees all that
committed before the lock was granted. Readers use REPEATABLE READ so that
several statements see one snapshot.

Opening connects once directly before the pool starts, so a refused port or
an unknown database fails at once with the server's reason, instead of the
pool retrying (and logging) until its timeout. Every URL this module shows,
in messages and in ``url``, has its secrets redacted.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool, PoolTimeout

from memlineage.errors import BadInput, StoreError
from memlineage.store.base import SqlStore
from memlineage.store.search import TsvectorSearch
from memlineage.store.sql import Statement, Tx

# One advisory lock key for "migrating memlineage's schema" (any stable number).
MIGRATION_LOCK_KEY = 0x6D656D6C
CONNECT_TIMEOUT_S = 5.0  # libpq's connect_timeout, unless the URL sets one
POOL_TIMEOUT_S = 30.0  # how long a transaction waits for a free pooled connection
COPY_FROM_ROWS = 64  # fewer rows than this are INSERTed (a prepared statement)
SECRET_PARAMS = frozenset({"password", "sslpassword"})
# What _begin_as makes psycopg send for a reader, for a pipelined one (_pipelined).
READ_ONLY_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

# The pool reports failed reconnections as warnings; without a handler of the
# application's, Python would print them on stderr. Records still propagate.
logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())


# A list parameter sent in binary: psycopg quotes each element of a text-format array
# with a regular expression, which cost a job 6 ms for its events' items (a JSON text
# each, every quote escaped); binary sends each element's bytes with their length.
BINARY = "%b"


@functools.lru_cache(maxsize=512)
def _pg(sql: str) -> str:
    """Statements are written with ``?``; psycopg wants ``%s`` (our SQL has no literal %,
    only ``BINARY`` placeholders)."""
    return sql.replace("?", "%s")


class PostgresTx(Tx):
    """A transaction on one connection; with ``pipeline``, one that runs in a pipeline
    (``PostgresStore._pipelined``): a statement whose rows are not read waits to go
    out with the next one that is, and only rows read through ``one``, ``all`` and
    ``all_together`` (or a count) are complete."""

    def __init__(self, conn: psycopg.Connection[Any], pipeline: psycopg.Pipeline | None = None):
        self.conn = conn
        self.pipeline = pipeline

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(_pg(sql), params)

    def all_unprepared(
        self, sql: str, params: Sequence[Any] = (), *, binary: bool = False
    ) -> list[Any]:
        return self.conn.execute(_pg(sql), params, prepare=False, binary=binary).fetchall()

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if len(rows) == 1:  # a pipeline costs more than it saves for one statement
            self.conn.execute(_pg(sql), rows[0])
            return
        with self.conn.cursor() as cur:
            cur.executemany(_pg(sql), rows)

    def returning_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> list[Any]:
        if len(rows) == 1:
            return [self.one(sql, rows[0])]
        # executemany pipelines the statements: one round trip, run in order.
        found = []
        with self.conn.cursor() as cur:
            cur.executemany(_pg(sql), list(rows), returning=True)
            for _ in rows:
                found.append(cur.fetchone())
                cur.nextset()
        return found

    def all_together(self, statements: Sequence[Statement]) -> list[list[Any]]:
        """One round trip: the statements go out in a pipeline, their rows come back."""
        if self.pipeline is not None:
            cursors = [self.conn.execute(_pg(sql), params) for sql, params in statements]
            self.pipeline.sync()
        else:
            with self.conn.pipeline():  # its end sends them and waits for every result
                cursors = [self.conn.execute(_pg(sql), params) for sql, params in statements]
        return [cur.fetchall() if cur.description is not None else [] for cur in cursors]

    @contextmanager
    def writes_together(self) -> Iterator[Tx]:
        if self.pipeline is None:
            yield self
            return
        merged = MergedWrites(self)
        yield merged
        merged.flush()

    def count(self, sql: str, params: Sequence[Any] = ()) -> int:
        cursor = self.execute(sql, params)
        if self.pipeline is not None:
            self.pipeline.sync()  # a row count is known once the statement's result is in
        return int(cursor.rowcount)

    def where_in(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
        if values:
            yield f"{column} = ANY({BINARY})", [list(values)]

    def insert_rows(self, table: str, columns: str, rows: Sequence[Sequence[Any]]) -> None:
        """COPY for a bulk import (measured about 2x executemany); INSERT for a few rows.

        COPY checks the same constraints, so a raced duplicate id still raises
        UniqueViolation and the append retries it under the lock.
        """
        if len(rows) < COPY_FROM_ROWS or self.pipeline is not None:  # no COPY in a pipeline
            super().insert_rows(table, columns, rows)
            return
        with self.conn.cursor() as cur, cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


class MergedWrites(Tx):
    """A pipelined transaction whose plain writes (an INSERT ... VALUES or an UPDATE of
    one table, reading no other, no RETURNING) wait, and go out as one statement of
    data-modifying WITH parts: on the server, one statement costs about as much as
    each of several. A part sees none of the others' effects, so a statement on a table
    that an earlier waiting one writes starts the next statement; anything else runs
    after the waiting writes, in order."""

    def __init__(self, tx: PostgresTx) -> None:
        self.tx = tx
        self.waiting: list[Statement] = []

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if _mergeable(sql):
            self.waiting.append((sql, params))
            return None
        self.flush()
        return self.tx.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if len(rows) == 1 and _mergeable(sql):
            self.waiting.append((sql, rows[0]))
            return
        self.flush()
        self.tx.executemany(sql, rows)

    def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        self.flush()
        return self.tx.one(sql, params)

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        self.flush()
        return self.tx.all(sql, params)

    def all_together(self, statements: Sequence[Statement]) -> list[list[Any]]:
        self.flush()
        return self.tx.all_together(statements)

    def all_unprepared(
        self, sql: str, params: Sequence[Any] = (), *, binary: bool = False
    ) -> list[Any]:
        self.flush()
        return self.tx.all_unprepared(sql, params, binary=binary)

    def returning_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> list[Any]:
        self.flush()
        return self.tx.returning_many(sql, rows)

    def count(self, sql: str, params: Sequence[Any] = ()) -> int:
        self.flush()
        return self.tx.count(sql, params)

    def where_in(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, list[Any]]]:
        return self.tx.where_in(column, values)

    def flush(self) -> None:
        """Send the waiting writes (as few statements as their tables allow)."""
        for sql, params in _merged(self.waiting):
            self.tx.execute(sql, params)
        self.waiting = []


def _mergeable(sql: str) -> bool:
    return sql.startswith(("INSERT INTO ", "UPDATE ")) and not any(
        word in sql for word in ("SELECT", "RETURNING")
    )


def _merged(statements: Sequence[Statement]) -> Iterator[Statement]:
    """``statements`` as WITH parts of as few statements as there are repeated tables."""
    group: list[Statement] = []
    tables: set[str] = set()
    for sql, params in statements:
        table = sql.split()[2 if sql.startswith("INSERT") else 1]
        if table in tables:
            yield _with_parts(group)
            group, tables = [], set()
        group.append((sql, params))
        tables.add(table)
    if group:
        yield _with_parts(group)


def _with_parts(group: Sequence[Statement]) -> Statement:
    if len(group) == 1:
        return group[0]
    parts = ", ".join(f"w{i} AS ({sql})" for i, (sql, _) in enumerate(group[:-1]))
    return f"WITH {parts} {group[-1][0]}", [p for _, params in group for p in params]


class PostgresStore(SqlStore):
    dialect = "postgres"
    integrity_errors = (psycopg.errors.UniqueViolation,)
    text_search = TsvectorSearch()
    # JIT compilation of an over-estimated recursion can cost more than the query itself.
    descendants_prelude = "SET LOCAL jit = off"
    # now(): the transaction's start, stable within it, so the claim can use its index.
    now_sql = "CAST(EXTRACT(EPOCH FROM now()) AS DOUBLE PRECISION)"
    # Workers on many machines: each claim skips the rows another one holds.
    claim_lock = " FOR UPDATE SKIP LOCKED"
    id_order = ' COLLATE "C"'  # a range of ids by code point, on its own index (0012)
    put_new_key_sql = f"SELECT memlineage_put_new_key({', '.join(['?'] * 16)})"  # (0014)

    text_rows = f"unnest(CAST({BINARY} AS TEXT[])) AS listed (value)"

    @staticmethod
    def text_list(values: Sequence[str]) -> Any:
        return list(values)

    event_texts_rows = (
        f"unnest(CAST({BINARY} AS BIGINT[]), CAST({BINARY} AS TEXT[]), CAST({BINARY} AS TEXT[]))"
        " AS listed (seq, id, body)"
    )

    @staticmethod
    def event_texts_params(rows: Sequence[tuple[int, str, str]]) -> tuple[Any, ...]:
        return ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])

    def __init__(
        self,
        url: str,
        *,
        migrate: bool = True,
        create: bool = True,
        pool_size: int = 4,
        connect_timeout: float | None = None,
        pool_timeout: float | None = None,
    ):
        options = self._settings(url, connect_timeout, pool_timeout)
        try:
            psycopg.connect(url, **options).close()  # the server's reason, at once
            self.pool = ConnectionPool(
                url,
                min_size=1,
                max_size=pool_size,
                open=True,
                timeout=self.pool_timeout,
                kwargs=options,
            )
            self.pool.wait(timeout=self.connect_timeout)
        except (psycopg.Error, PoolTimeout) as exc:
            raise self._refused(exc) from None
        if migrate:
            try:
                self.migrate(create=create)
            except BaseException:
                self.pool.close()
                raise

    def _settings(
        self, url: str, connect_timeout: float | None, pool_timeout: float | None
    ) -> dict[str, Any]:
        """Record the redacted URL and the timeouts; the connections' options."""
        self.url = redact(url)
        self._secrets = secrets_of(url)
        self.connect_timeout = _setting(
            connect_timeout, "MEMLINEAGE_PG_CONNECT_TIMEOUT", CONNECT_TIMEOUT_S
        )
        self.pool_timeout = _setting(pool_timeout, "MEMLINEAGE_PG_POOL_TIMEOUT", POOL_TIMEOUT_S)
        options: dict[str, Any] = {"autocommit": True}  # transactions are explicit blocks
        if "connect_timeout" not in _query(url):
            options["connect_timeout"] = max(1, round(self.connect_timeout))
        return options

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    @contextmanager
    def _transaction(self, read_only: bool, pipelined: bool = False) -> Iterator[Tx]:
        with self._driver_errors(), self.pool.connection() as conn:
            if pipelined:
                with _pipelined(conn, read_only) as tx:
                    yield tx
                return
            _begin_as(conn, read_only)
            with conn.transaction():
                yield PostgresTx(conn)

    @contextmanager
    def _driver_errors(self) -> Iterator[None]:
        """psycopg's errors as the project's, in one line with secrets redacted.

        A unique violation passes: the append retries it under the lock.
        """
        try:
            yield
        except self.integrity_errors:
            raise
        except psycopg.DataError as exc:
            # e.g. NUL in a text value, or text that is not valid in the server's encoding
            raise BadInput(f"PostgreSQL cannot store a value: {self._one_line(exc)}") from None
        except psycopg.errors.ProgramLimitExceeded as exc:
            raise BadInput(f"a value is too long for PostgreSQL: {self._one_line(exc)}") from None
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"PostgreSQL at {self.url}: {self._one_line(exc)}") from None

    def _refused(self, exc: BaseException) -> StoreError:
        return StoreError(f"cannot connect to PostgreSQL at {self.url}: {self._one_line(exc)}")

    def _one_line(self, exc: BaseException) -> str:
        parts = [p.strip() for p in str(exc).splitlines() if p.strip()]
        return scrub(" ".join(parts) or type(exc).__name__, self._secrets)

    def _write(self) -> Any:
        return self._transaction(read_only=False)

    def _read(self) -> Any:
        return self._transaction(read_only=True)

    def _pipelined_write(self) -> Any:
        return self._transaction(read_only=False, pipelined=True)

    def _pipelined_read(self) -> Any:
        return self._transaction(read_only=True, pipelined=True)

    def _read_once(self, sql: str, params: Sequence[Any]) -> list[Any]:
        with self._driver_errors(), self.pool.connection() as conn:  # autocommit
            return conn.execute(_pg(sql), params).fetchall()

    def _write_once(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return self._read_once(sql, params)  # autocommit: the statement is its transaction

    @contextmanager
    def _one_statement(self, read_only: bool = False) -> Iterator[Tx]:
        # The pool's connections are in autocommit: one statement is its own transaction
        # (READ COMMITTED, read-write: a reader's REPEATABLE READ READ ONLY set on the
        # connection applies to BEGIN only).
        with self._driver_errors(), self.pool.connection() as conn:
            yield PostgresTx(conn)

    def _read_together(self, statements: Sequence[Statement]) -> list[list[Any]]:
        with self._transaction(read_only=True, pipelined=True) as tx:
            cursors = [tx.execute(sql, params) for sql, params in statements]
        # The rows came back with COMMIT's trip, at the pipeline's end.
        return [cur.fetchall() if cur.description is not None else [] for cur in cursors]

    def _lock_for_migration(self, tx: Tx) -> None:
        tx.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK_KEY,))

    def _table_names(self, tx: Tx) -> set[str]:
        # CREATE TABLE without a schema name creates in current_schema(): look there.
        rows = tx.all("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        return {r[0] for r in rows}

    def optimize(self) -> list[str]:
        """The planner's statistics of every table of the store refreshed (``ANALYZE``):
        what a bulk load leaves out of date until autovacuum comes round. The
        ``tsvector`` index needs no merge."""
        with self._write() as tx:
            tables = self.own_tables(tx)
            for table in tables:
                tx.execute(f"ANALYZE {table}")  # a name from memlineage's own migrations
        return [f"planner statistics refreshed ({len(tables)} tables)"]

    def close(self) -> None:
        self.pool.close()

    def parallelism(self) -> int:
        return int(self.pool.max_size)

    def discard(self) -> None:
        """Close; the server's database was there before this store opened it."""
        self.close()


@contextmanager
def _pipelined(conn: psycopg.Connection[Any], read_only: bool) -> Iterator[PostgresTx]:
    """A transaction in one pipeline: BEGIN goes out with its first statements and
    COMMIT with its last ones, so a transaction that waits for rows once costs two
    round trips. (psycopg's ``transaction()`` in a pipeline waits at BEGIN and twice
    at COMMIT, hence BEGIN and COMMIT written here.) On an error the transaction is
    rolled back after the pipeline ends."""
    try:
        with conn.pipeline() as pipeline:
            try:
                conn.execute(READ_ONLY_BEGIN if read_only else "BEGIN")
                yield PostgresTx(conn, pipeline)
                conn.execute("COMMIT")
            except BaseException:
                # Collect the results an error aborted here: at the pipeline's end
                # psycopg would log them as a warning.
                with contextlib.suppress(psycopg.Error):
                    pipeline.sync()
                raise
    except BaseException:
        if conn.pgconn.transaction_status != TransactionStatus.IDLE:
            conn.execute("ROLLBACK")
        raise


def _begin_as(conn: psycopg.Connection[Any], read_only: bool) -> None:
    """Readers begin REPEATABLE READ READ ONLY, writers plainly (READ COMMITTED).

    psycopg names them in the BEGIN itself: one statement, where a SET
    TRANSACTION after BEGIN would be a second round trip. Pooled connections
    serve both, so every transaction sets both (no round trip either way).
    """
    level = psycopg.IsolationLevel.REPEATABLE_READ if read_only else None
    if conn.isolation_level != level:
        conn.isolation_level = level
    if conn.read_only != (read_only or None):
        conn.read_only = read_only or None


def _setting(value: float | None, env: str, default: float) -> float:
    if value is not None:
        return float(value)
    raw = os.environ.get(env)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise StoreError(f"{env} must be a number of seconds, not {raw!r}") from None


def _query(url: str) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))


def secrets_of(url: str) -> list[str]:
    """Every secret a URL carries (userinfo password, ``password=`` parameters), as written
    and decoded."""
    parts = urlsplit(url)
    found = []
    if parts.password:
        found += [parts.password, unquote(parts.password)]
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k in SECRET_PARAMS]
    raw_query = [pair.split("=", 1) for pair in parts.query.split("&") if "=" in pair]
    found += [v for k, v in raw_query if unquote(k) in SECRET_PARAMS]
    return sorted({s for s in found if s}, key=len, reverse=True)


def redact(url: str) -> str:
    """The URL with every password replaced by ``***`` (userinfo and query parameters)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{userinfo.split(':', 1)[0]}:***@{host}"
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(k in SECRET_PARAMS for k, _ in query):
        masked = [(k, "***" if k in SECRET_PARAMS else v) for k, v in query]
        return urlunsplit(parts._replace(netloc=netloc, query=urlencode(masked, safe="*-=")))
    return urlunsplit(parts._replace(netloc=netloc))


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with each secret replaced by ``***`` (a driver may echo its conninfo)."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
