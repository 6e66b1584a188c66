"""Round trips to PostgreSQL per LangGraph store operation, ours against LangGraph's own.

Both stores connect through a loopback relay that counts the round trips on the wire
(tests/wire.py: each question of the client that the server answers). Counted per
operation, after a warm-up, as the median of ``--repeats``:

- ``put new``: a key the namespace does not have yet;
- ``put replace``: a new value of an existing key;
- ``put same``: the value the key has already;
- ``delete``: ``put`` of None on an existing key;
- ``get``: an existing key.

    python bench/bench_langgraph_trips.py [--repeats 20]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from langgraph.store.base import BaseStore

from common import PG_URL, schema_url
from memlineage.interfaces.langgraph import MemlineageStore

sys.path.append(str(Path(__file__).resolve().parents[1] / "tests"))
from wire import Relay  # the tests' counter: one definition of a round trip

NS = ("memories", "user-7")


@contextlib.contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    import psycopg

    schema = f"bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield schema_url(schema, url)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def measure(store: BaseStore, relay: Relay, repeats: int) -> dict[str, float]:
    for i in range(10):  # warm-up: the pool's connections, the prepared statements
        store.put(NS, f"warm{i}", {"content": f"warm {i}"})
        store.put(NS, f"warm{i}", {"content": f"warm {i} again"})
        store.get(NS, f"warm{i}")
    trips: dict[str, list[int]] = {}

    def count(name: str, fn: Callable[[], object]) -> None:
        trips.setdefault(name, []).append(relay.count(fn))

    for i in range(repeats):
        key, first, second = f"k{i}", {"content": f"value {i}"}, {"content": f"value {i} again"}
        count("put new", functools.partial(store.put, NS, key, first))
        count("put replace", functools.partial(store.put, NS, key, second))
        count("put same", functools.partial(store.put, NS, key, second))
        count("get", functools.partial(store.get, NS, key))
        count("delete", functools.partial(store.delete, NS, key))
    return {name: statistics.median(counts) for name, counts in trips.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    relay = Relay(PG_URL)
    try:
        with fresh_schema(PG_URL) as url:
            ours = MemlineageStore(relay.url_through(url))
            try:
                show("MemlineageStore", measure(ours, relay, args.repeats))
            finally:
                ours.close()
        try:
            from langgraph.store.postgres import PostgresStore
        except ImportError:
            print("PostgresStore: langgraph-checkpoint-postgres is not installed")
            return
        with (
            fresh_schema(PG_URL) as url,
            PostgresStore.from_conn_string(relay.url_through(url)) as pg,
        ):
            pg.setup()
            show("PostgresStore", measure(pg, relay, args.repeats))
    finally:
        relay.close()


def show(name: str, trips: dict[str, float]) -> None:
    print(f"{name}: " + "; ".join(f"{k} {v:g}" for k, v in trips.items()), flush=True)


if __name__ == "__main__":
    main()
