"""Storage backends behind one seam; ``open_store`` picks one from a URL."""

from __future__ import annotations

import os
from pathlib import Path

from .base import SqlStore
from .protocol import Appended, Head, OpResult, Reader, Store

DEFAULT_DB = "memlineage.db"


def default_url() -> str:
    return os.environ.get("MEMLINEAGE_DB") or DEFAULT_DB


def open_store(url: str | None = None) -> SqlStore:
    """``postgresql://…`` opens PostgreSQL; anything else is a SQLite file path."""
    url = url or default_url()
    if url.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore(url)
    from .sqlite import SqliteStore

    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    return SqliteStore(Path(path))


__all__ = ["Appended", "Head", "OpResult", "Reader", "SqlStore", "Store", "open_store"]
