"""Helpers shared by the benchmarks: timing with medians, printing ratios, and a
Memory on a throwaway SQLite file or PostgreSQL schema."""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

from memlineage import Memory

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """The median wall time of ``repeats`` runs of ``fn`` (the machine is noisy)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))
    return ordered[index]


def report(
    name: str, value: float, unit: str, baseline: str | None = None, ratio: float | None = None
) -> None:
    line = f"{name:<44} {value:>12,.2f} {unit}"
    if baseline is not None and ratio is not None:
        line += f"   ratio vs {baseline}: {ratio:.2f}"
    print(line, flush=True)


def schema_url(schema: str, base: str = PG_URL) -> str:
    """The PostgreSQL URL (``base``'s server) whose connections see only ``schema``."""
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}options={quote(f'-csearch_path={schema}')}"


@contextlib.contextmanager
def open_memory(backend: str, tenant: str) -> Iterator[Memory]:
    """A Memory of ``tenant`` on a new SQLite file or PostgreSQL schema, dropped after."""
    if backend == "sqlite":
        with (
            tempfile.TemporaryDirectory() as tmp,
            Memory(str(Path(tmp) / f"{tenant}.db"), tenant=tenant) as memory,
        ):
            yield memory
        return
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        with Memory(schema_url(schema), tenant=tenant) as memory:
            yield memory
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@contextlib.contextmanager
def kept_memory(backend: str, tenant: str, name: str) -> Iterator[Memory]:
    """A Memory on the SQLite file ``name``.db or the PostgreSQL schema bench_``name``,
    kept after the run: a benchmark whose build takes long builds it once."""
    if backend == "sqlite":
        with Memory(str(Path(name).with_suffix(".db")), tenant=tenant) as memory:
            yield memory
        return
    import psycopg

    schema = f"bench_{name}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    with Memory(schema_url(schema), tenant=tenant) as memory:
        yield memory


def postgres_reachable() -> bool:
    import psycopg

    try:
        with psycopg.connect(PG_URL, connect_timeout=3):
            return True
    except psycopg.Error as exc:
        print(f"postgres: skipped, not reachable at {PG_URL}: {exc}".splitlines()[0])
        return False
