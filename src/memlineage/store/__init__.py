"""Storage backends behind one seam; ``open_store`` picks one from a URL."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

from memlineage.errors import StoreError
from memlineage.store.protocol import Appended, AsyncStore, Head, OpResult, Reader, Store

DEFAULT_DB = "memlineage.db"
# ``host=... dbname=...``: a libpq keyword/value connection string, not a file name.
_KEYWORD_DSN = re.compile(r"\s*[A-Za-z_]+\s*=")


def default_url() -> str:
    return os.environ.get("MEMLINEAGE_DB") or DEFAULT_DB


def open_store(url: str | None = None, *, create: bool = True) -> Store:
    """``postgresql://…`` or a libpq keyword DSN (``host=… dbname=…``) opens PostgreSQL;
    anything else is a SQLite file path.

    ``create=False`` raises ``StoreError`` ("no memlineage database at …")
    instead of creating a database that does not exist yet. A ``sqlite:///``
    URL may carry ``?busy_timeout=SECONDS`` and ``?mode=ro`` (read-only).
    """
    url = url or default_url()
    postgres = postgres_url(url)
    if postgres is not None:
        from memlineage.store.postgres import PostgresStore

        return PostgresStore(postgres, create=create)
    from memlineage.store.sqlite import BUSY_TIMEOUT_MS, SqliteStore

    if not url.startswith("sqlite:"):
        return SqliteStore(Path(url), create=create)
    path, _, query = url.removeprefix("sqlite:///").removeprefix("sqlite://").partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - {"busy_timeout", "mode"})
    if unknown or options.get("mode", "ro") != "ro":
        raise StoreError(f"unknown SQLite URL option in {url!r}: use busy_timeout=S or mode=ro")
    try:
        busy_ms = (
            round(float(options["busy_timeout"]) * 1000)
            if "busy_timeout" in options
            else BUSY_TIMEOUT_MS
        )
    except ValueError:
        raise StoreError(f"busy_timeout must be a number of seconds in {url!r}") from None
    return SqliteStore(
        Path(path), create=create, busy_timeout_ms=busy_ms, read_only="mode" in options
    )


def async_store(url: str | None = None, *, pool_size: int = 4) -> AsyncStore | None:
    """The store at ``url`` over an asynchronous driver, not connected yet (``await
    store.open()`` on the loop that will use it); None when the backend has none (SQLite)."""
    postgres = postgres_url(url or default_url())
    if postgres is None:
        return None
    from memlineage.store.postgres_async import AsyncPostgresStore

    return AsyncPostgresStore(postgres, pool_size=pool_size)


def postgres_url(url: str) -> str | None:
    """The ``postgresql://`` URL ``url`` names (a libpq keyword DSN converted), or None."""
    if _KEYWORD_DSN.match(url):
        url = keyword_dsn_url(url)
    return url if url.startswith(("postgresql://", "postgres://")) else None


def keyword_dsn_url(dsn: str) -> str:
    """A libpq keyword DSN as the equivalent ``postgresql://`` URL (every keyword a query
    parameter), so its password is redacted like a URL's. The DSN itself is never echoed:
    it may carry a password."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error:  # its message may quote the DSN, password included
        raise StoreError(
            "the database looks like a libpq keyword DSN (host=... dbname=...) but libpq"
            " cannot parse it; give a file path, a sqlite:/// URL or a postgresql:// URL"
        ) from None
    return "postgresql://?" + urlencode({k: str(v) for k, v in params.items()})


__all__ = [
    "Appended",
    "AsyncStore",
    "Head",
    "OpResult",
    "Reader",
    "Store",
    "async_store",
    "open_store",
]
