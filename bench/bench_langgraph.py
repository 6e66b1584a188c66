"""The LangGraph store against LangGraph's own stores, on SQLite and PostgreSQL.

For each backend: ``put`` of ``--small`` then ``--large`` distinct keys into one
namespace (p50 per put, timed from the second size on the same growing
namespace), then ``get`` of random keys after each (p50). Baselines in the same
run: ``InMemoryStore`` and, when importable, ``SqliteStore``
(``langgraph-checkpoint-sqlite``) and ``PostgresStore``
(``langgraph-checkpoint-postgres``) doing the same. Printed: p50s, the speed
ratio (theirs / ours: 1.0 is as fast, 0.5 twice as slow) and how much a get
after ``--large`` puts costs against one after ``--small``.

    python bench/bench_langgraph.py [--small 200 --large 2000] [--no-pg]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from common import PG_URL, percentile, schema_url
from memlineage.interfaces.langgraph import MemlineageStore

NS = ("memories", "user-7")


def value(i: int) -> dict[str, Any]:
    return {"content": f"Fact number {i}: the meeting room {i % 37} is booked on day {i % 28}."}


def measure(store: BaseStore, small: int, large: int, gets: int) -> dict[str, float]:
    """p50 milliseconds of put and of get after ``small`` and after ``large`` keys."""
    rng = random.Random(7)
    out: dict[str, float] = {}
    done = 0
    for size in (small, large):
        times = []
        for i in range(done, size):
            started = time.perf_counter()
            store.put(NS, f"k{i}", value(i))
            times.append(time.perf_counter() - started)
        done = size
        out[f"put {size}"] = percentile(times, 50) * 1000
        times = []
        for _ in range(gets):
            key = f"k{rng.randrange(size)}"
            started = time.perf_counter()
            item = store.get(NS, key)
            times.append(time.perf_counter() - started)
            assert item is not None
        out[f"get {size}"] = percentile(times, 50) * 1000
    return out


@contextlib.contextmanager
def theirs(backend: str, tmp: Path) -> Iterator[tuple[str, BaseStore] | None]:
    try:
        if backend == "sqlite":
            from langgraph.store.sqlite import SqliteStore

            with SqliteStore.from_conn_string(str(tmp / "theirs.db")) as store:
                store.setup()
                yield "SqliteStore", store
        else:
            from langgraph.store.postgres import PostgresStore

            with fresh_schema() as url, PostgresStore.from_conn_string(url) as store:
                store.setup()
                yield "PostgresStore", store
    except ImportError:
        yield None


@contextlib.contextmanager
def fresh_schema() -> Iterator[str]:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield schema_url(schema, PG_URL)
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def show(name: str, figures: dict[str, float], base: dict[str, float] | None, label: str) -> None:
    parts = []
    for what, ms in figures.items():
        text = f"{what} {ms:.3f} ms"
        if base is not None:
            text += f" ({base[what] / ms:.2f}x of {label})"
        parts.append(text)
    print(f"{name}: " + "; ".join(parts), flush=True)


def bench(backend: str, small: int, large: int, gets: int, tmp: Path) -> None:
    memory_store = measure(InMemoryStore(), small, large, gets)
    show(f"{backend}: InMemoryStore", memory_store, None, "")
    sqlite_url = contextlib.nullcontext(str(tmp / "ours.db"))
    with sqlite_url if backend == "sqlite" else fresh_schema() as url:
        ours_store = MemlineageStore(url)
        try:
            ours = measure(ours_store, small, large, gets)
        finally:
            ours_store.close()
    show(f"{backend}: MemlineageStore", ours, memory_store, "InMemoryStore")
    with theirs(backend, tmp) as found:
        if found is None:
            print(f"{backend}: LangGraph's own store is not installed; InMemoryStore only")
        else:
            name, store = found
            figures = measure(store, small, large, gets)
            show(f"{backend}: {name}", figures, None, "")
            print(
                f"{backend}: MemlineageStore vs {name}: "
                + "; ".join(f"{k} {figures[k] / ours[k]:.2f}x" for k in ours),
                flush=True,
            )
    print(
        f"{backend}: MemlineageStore get after {large:,} / after {small:,} puts:"
        f" {ours[f'get {large}'] / ours[f'get {small}']:.2f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", type=int, default=200)
    parser.add_argument("--large", type=int, default=2_000)
    parser.add_argument("--gets", type=int, default=500)
    parser.add_argument("--no-pg", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memlineage-bench-") as tmp:
        for backend in ("sqlite",) if args.no_pg else ("sqlite", "postgres"):
            bench(backend, args.small, args.large, args.gets, Path(tmp))


if __name__ == "__main__":
    main()
