"""One suite over both backends: every test that takes ``db_url`` runs on SQLite and PostgreSQL.

PostgreSQL tests use ``MEMLINEAGE_TEST_PG`` (default: the local server's
``test`` database), each in a schema of its own that is dropped afterwards.
Without a server they are skipped, except under ``CI=true``, where a missing
PostgreSQL fails the run.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from memlineage import Memory

PG_URL = os.environ.get("MEMLINEAGE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def _pg_available() -> str | None:
    try:
        with psycopg.connect(PG_URL, connect_timeout=3):
            return None
    except psycopg.Error as exc:
        return str(exc).strip().splitlines()[0]


_PG_PROBLEM = _pg_available()


def require_postgres() -> None:
    if _PG_PROBLEM is None:
        return
    message = f"PostgreSQL not reachable at {PG_URL}: {_PG_PROBLEM}"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message} (CI=true requires the PostgreSQL tests to run)")
    pytest.skip(message)


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose connections see only a fresh schema, dropped after the test."""
    require_postgres()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in PG_URL else "?"
    yield f"{PG_URL}{separator}options={quote(f'-csearch_path={schema}')}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "memlineage.db")
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def memory(db_url: str) -> Iterator[Memory]:
    with Memory(db_url, tenant="acme") as mem:
        yield mem


@pytest.fixture(scope="module")
def fake() -> Iterator[Any]:
    """A fake OpenAI-compatible server on 127.0.0.1 (tests/llm_server.py), per module."""
    from llm_server import running

    with running() as server:
        yield server


@pytest.fixture
def fresh_endpoints() -> Iterator[None]:
    """What a server was seen to accept is remembered per process: not across tests."""
    from memlineage.consolidation.generators.openai import forget_endpoints

    forget_endpoints()
    yield
    forget_endpoints()


@pytest.fixture
def shared_data() -> Path:
    """The read-only data folder beside the checkout (never copied into the project)."""
    path = Path(os.environ.get("MEMLINEAGE_SHARED_DATA", SHARED / "data"))
    if not path.exists():
        message = f"shared data not found at {path} (set MEMLINEAGE_SHARED_DATA)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI=true requires it")
        pytest.skip(message)
    return path
