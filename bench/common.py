"""Helpers shared by the benchmarks: timing with medians, printing ratios, the store
of a benchmark (a throwaway SQLite file or PostgreSQL schema, or a kept one), and
where the shared data (LoCoMo) is read from."""

from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

from memlineage import Memory

PG_URL = os.environ.get("MEMLINEAGE_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
# The data folder beside the checkout, read in place and never copied.
CHECKOUT_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
SHARED_DATA = Path(os.environ.get("MEMLINEAGE_SHARED_DATA", CHECKOUT_SHARED))
LOCOMO = SHARED_DATA / "locomo" / "locomo10.json"


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
        line += f"   ratio vs {baseline}: {ratio:.3g}"  # 3 digits: 0.0456, 0.885, 11.2
    print(line, flush=True)


def schema_url(schema: str, base: str = PG_URL) -> str:
    """The PostgreSQL URL (``base``'s server) whose connections see only ``schema``."""
    separator = "&" if "?" in base else "?"
    return f"{base}{separator}options={quote(f'-csearch_path={schema}')}"


@contextlib.contextmanager
def store_url(backend: str, *, keep: str | None = None, pg: str = PG_URL) -> Iterator[str]:
    """The URL of a store for a benchmark: a new SQLite file or PostgreSQL schema (of
    ``pg``'s server), dropped after; with ``keep``, the file ``keep``.db or the schema
    bench_``keep``, made if missing and kept (a benchmark whose build takes long builds
    it once). The one place a benchmark's store is made."""
    if backend == "sqlite":
        if keep:
            yield str(Path(keep).with_suffix(".db"))
            return
        with tempfile.TemporaryDirectory(prefix="memlineage-bench-") as tmp:
            yield str(Path(tmp) / f"{uuid.uuid4().hex[:10]}.db")
        return
    import psycopg

    schema = f"bench_{keep}" if keep else f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    try:
        yield schema_url(schema, pg)
    finally:
        if not keep:
            with psycopg.connect(pg, autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")


@contextlib.contextmanager
def open_memory(
    backend: str, tenant: str = "default", *, keep: str | None = None, pg: str = PG_URL
) -> Iterator[Memory]:
    """A Memory of ``tenant`` on a store of ``store_url`` (dropped after unless ``keep``)."""
    with store_url(backend, keep=keep, pg=pg) as url, Memory(url, tenant=tenant) as memory:
        yield memory


def postgres_reachable(pg: str = PG_URL) -> bool:
    import psycopg

    try:
        with psycopg.connect(pg, connect_timeout=3):
            return True
    except psycopg.Error as exc:
        print(f"postgres: skipped, not reachable at {pg}: {exc}".splitlines()[0])
        return False
