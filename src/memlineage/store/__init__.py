"""Storage backends behind one seam; ``open_store`` picks one from a URL."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl

from memlineage.errors import StoreError
from memlineage.store.protocol import Appended, Head, OpResult, Reader, Store

DEFAULT_DB = "memlineage.db"


def default_url() -> str:
    return os.environ.get("MEMLINEAGE_DB") or DEFAULT_DB


def open_store(url: str | None = None, *, create: bool = True) -> Store:
    """``postgresql://…`` opens PostgreSQL; anything else is a SQLite file path.

    ``create=False`` raises ``StoreError`` ("no memlineage database at …")
    instead of creating a database that does not exist yet. A ``sqlite:///``
    URL may carry ``?busy_timeout=SECONDS`` and ``?mode=ro`` (read-only).
    """
    url = url or default_url()
    if url.startswith(("postgresql://", "postgres://")):
        from memlineage.store.postgres import PostgresStore

        return PostgresStore(url, create=create)
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


__all__ = ["Appended", "Head", "OpResult", "Reader", "Store", "open_store"]
