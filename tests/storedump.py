"""Every row of every table of a store, to show that refused input changed nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import psycopg

Dump = dict[str, list[tuple[str, ...]]]


def dump(url: str) -> Dump | None:
    """Every table's rows as sorted text tuples; None when a SQLite file does not exist."""
    if url.startswith("postgresql://"):
        return _dump_postgres(url)
    if not Path(url).exists():
        return None
    conn = sqlite3.connect(url)
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        return {name: _rows(conn.execute(f'SELECT * FROM "{name}"').fetchall()) for name in names}
    finally:
        conn.close()


def _dump_postgres(url: str) -> Dump:
    with psycopg.connect(url) as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = current_schema() ORDER BY table_name"
            )
        ]
        return {name: _rows(conn.execute(f'SELECT * FROM "{name}"').fetchall()) for name in names}


def _rows(rows: list[Any]) -> list[tuple[str, ...]]:
    return sorted(tuple(repr(v) for v in row) for row in rows)


def count_events(url: str) -> int:
    tables = dump(url) or {}
    return len(tables.get("events", []))
