"""``optimize``: maintenance after a bulk load, which changes no answer (store/*.py).

On SQLite a recall's cold lookup reads the full-text index once per segment, and a
bulk load leaves many; ``optimize`` merges them into one. Both backends refresh the
planner's statistics. Nothing a reader gets may change.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import psycopg

from memlineage import Memory
from memlineage.interfaces.cli import main
from memlineage.recall.prompt import render

WORDS = ["jazz", "tea", "Lisbon", "budget", "rack", "peanuts", "passport", "insurance"]


def batches(subject: str, count: int) -> list[list[dict[str, Any]]]:
    """``count`` adds of four events each, every one a separate write (a segment each)."""
    return [
        [
            {"id": f"{subject}-{b}-{n}", "subject": subject,
             "text": f"Note {b}.{n}: the {WORDS[(b + n) % 8]} item number {b * 4 + n}."}
            for n in range(4)
        ]
        for b in range(count)
    ]  # fmt: skip


def recalls(memory: Memory) -> list[Any]:
    return [
        memory.recall(subject, query=query, budget=120).to_json()
        for subject in ("user-1", "user-2")
        for query in ("what about jazz and tea", "the passport", "Lisbon budget")
    ]


def test_optimize_changes_no_recall(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        for batch in batches("user-1", 12) + batches("user-2", 12):
            memory.add(batch)
        assert memory.consolidate("user-1").switched  # summary mode, with cold events
        before = recalls(memory)
        done = memory.optimize()
        assert done and all(isinstance(line, str) and line for line in done)
        assert recalls(memory) == before
        assert memory.optimize() == done  # safe to repeat


def segments(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(DISTINCT segid) FROM events_fts_idx").fetchone()[0])


def test_optimize_merges_sqlite_full_text_index_into_one_segment(tmp_path: Path) -> None:
    path = tmp_path / "bulk.db"
    with Memory(str(path), tenant="acme") as memory:
        for batch in batches("user-1", 40):
            memory.add(batch)
        assert segments(path) > 1
        assert memory.optimize()[0] == "full-text index merged into one segment"
        assert segments(path) == 1
        found = memory.recall("user-1", query="passport", budget=400)
        assert "passport item number" in render(found)


def test_optimize_analyzes_the_store_s_postgres_tables(pg_url: str) -> None:
    with Memory(pg_url, tenant="acme") as memory:
        memory.add(batches("user-1", 3)[0])
        (done,) = memory.optimize()
    with psycopg.connect(pg_url) as conn:
        analyzed = {
            r[0]
            for r in conn.execute(
                "SELECT relname FROM pg_stat_user_tables"
                " WHERE schemaname = current_schema() AND last_analyze IS NOT NULL"
            )
        }
    assert {"events", "operations", "artifacts", "event_keys"} <= analyzed
    assert done == f"planner statistics refreshed ({len(analyzed)} tables)"


def test_the_command_line_optimizes_and_says_what_it_did(db_url: str) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add(batches("user-1", 2)[0])
    out = io.StringIO()
    assert main(["optimize", "--db", db_url, "--json"], stdout=out) == 0
    assert json.loads(out.getvalue())["done"][-1].startswith("planner statistics refreshed")
