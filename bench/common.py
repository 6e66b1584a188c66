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
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from memlineage import Memory
from memlineage.recall.embed import Embedder

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
    backend: str,
    tenant: str = "default",
    *,
    keep: str | None = None,
    pg: str = PG_URL,
    embedder: Embedder | str | None = None,
) -> Iterator[Memory]:
    """A Memory of ``tenant`` on a store of ``store_url`` (dropped after unless ``keep``);
    ``embedder``: the one it embeds with (None: the default)."""
    with (
        store_url(backend, keep=keep, pg=pg) as url,
        Memory(url, tenant=tenant, embedder=embedder) as memory,
    ):
        yield memory


def postgres_reachable(pg: str = PG_URL) -> bool:
    import psycopg

    try:
        with psycopg.connect(pg, connect_timeout=3):
            return True
    except psycopg.Error as exc:
        print(f"postgres: skipped, not reachable at {pg}: {exc}".splitlines()[0])
        return False


class _Trips(Protocol):
    trips: int


class Tracer:
    """A stack of phases; what passes between two marks goes to the phase on top.

    Phases are the functions ``wrap`` replaces where their callers look them up (no
    profiler: its overhead skews the split). ``relay``: a counter of round trips (the
    tests' ``wire.Relay``), ``pids``: the server backends whose CPU to charge; neither
    for a store in this process."""

    def __init__(self, relay: _Trips | None, pids: Callable[[], list[int]]) -> None:
        self.relay = relay
        self.pids = pids
        self.stack = ["loop"]
        self.trips: dict[str, int] = defaultdict(int)
        self.cpu: dict[str, float] = defaultdict(float)
        self.server: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)
        self.last = self._now()
        self.undo: list[tuple[Any, str, Any]] = []

    def restore(self) -> None:
        for owner, attr, inner in reversed(self.undo):
            setattr(owner, attr, inner)

    def _now(self) -> tuple[int, float, float, float]:
        trips = self.relay.trips if self.relay is not None else 0
        server = 0.0
        for pid in self.pids():
            with open(f"/proc/{pid}/schedstat") as f:
                server += int(f.read().split()[0]) / 1e9
        return trips, time.thread_time(), server, time.perf_counter()

    def mark(self) -> None:
        now = self._now()
        top = self.stack[-1]
        self.trips[top] += now[0] - self.last[0]
        self.cpu[top] += now[1] - self.last[1]
        self.server[top] += now[2] - self.last[2]
        self.wall[top] += now[3] - self.last[3]
        self.last = self._now()  # the marks' own cost is charged to no phase

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self.mark()
        self.stack.append(name)
        try:
            yield
        finally:
            self.mark()
            self.stack.pop()

    def wrap(self, owner: Any, attr: str, name: str | Callable[[], str]) -> None:
        inner = getattr(owner, attr, None)
        if inner is None:  # an older version of the code, without this step
            return
        self.undo.append((owner, attr, inner))

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self.phase(name() if callable(name) else name):
                return inner(*args, **kwargs)

        setattr(owner, attr, wrapped)

    def wrap_context(self, owner: Any, attr: str, name: Callable[[], str]) -> None:
        """A context manager factory (``store.reader``): the phase spans the ``with``."""
        inner = getattr(owner, attr)
        self.undo.append((owner, attr, inner))

        @contextlib.contextmanager
        def wrapped(*args: Any, **kwargs: Any) -> Iterator[Any]:
            with self.phase(name()), inner(*args, **kwargs) as found:
                yield found

        setattr(owner, attr, wrapped)
