"""Prometheus metrics of a ``serve`` or ``worker`` process (names and meaning: docs/workers.md).

Counters and histograms are observed where the work happens (an HTTP recall or
consolidation, a worker's job). Two families are read from the store when
Prometheus scrapes, for the tenants and subjects this process has worked on:
the job queue by state, and the summaries recall would serve although they are
not fresh (``memlineage_stale_artifacts_visible``, which must stay 0).
"""

from __future__ import annotations

import threading
import time
from collections import Counter as Tally
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from prometheus_client import REGISTRY, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from memlineage.consolidation.consolidate import Consolidation
from memlineage.operations.evaluate import visible_stale
from memlineage.operations.queue import JOB_STATES
from memlineage.store.protocol import Store

# Latency buckets from a cached recall (milliseconds) to an LLM consolidation (minutes).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
WATCHED_SUBJECTS = 1000  # the stale check reads this many recently used subjects at most

CONSOLIDATION_SECONDS = Histogram(
    "memlineage_consolidation_seconds",
    "Time of one consolidation (generate, gate, switch), by where it ran",
    ["interface"],
    buckets=BUCKETS,
)
CONSOLIDATIONS = Counter(
    "memlineage_consolidations", "Consolidations by resulting artifact status", ["status"]
)
RECALL_SECONDS = Histogram(
    "memlineage_recall_seconds", "Time of one recall, by route", ["route"], buckets=BUCKETS
)
GATE_FAILURES = Counter(
    "memlineage_gate_failures", "Fidelity gate failures by failure code", ["code"]
)
FALLBACKS = Counter(
    "memlineage_generator_fallbacks",
    "Consolidations that published the built-in generator's output after a model failed",
)
SCRAPE_ERRORS = Counter(
    "memlineage_metrics_store_errors", "Scrapes whose store-backed families could not be read"
)
JOBS_RUN = Counter("memlineage_worker_jobs", "Jobs a worker ran, by outcome", ["outcome"])


class StoreCollector(Collector):
    """Families read from the store at scrape time, for what this process worked on."""

    def __init__(self) -> None:
        self.store: Store | None = None
        self.subjects: OrderedDict[tuple[str, str], None] = OrderedDict()
        self.tenants: set[str] = set()
        self.lock = threading.Lock()

    def watch(self, tenant: str, subjects: Iterable[str] = ()) -> None:
        with self.lock:
            self.tenants.add(tenant)
            for subject in subjects:
                self.subjects[(tenant, subject)] = None
                self.subjects.move_to_end((tenant, subject))
            while len(self.subjects) > WATCHED_SUBJECTS:
                self.subjects.popitem(last=False)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        jobs = GaugeMetricFamily(
            "memlineage_jobs", "Jobs in the queue by state", labels=["tenant", "state"]
        )
        stale = GaugeMetricFamily(
            "memlineage_stale_artifacts_visible",
            "Recently used subjects whose recall would serve a summary that is not fresh"
            " (must stay 0)",
            labels=["tenant"],
        )
        store = self.store
        with self.lock:
            tenants = sorted(self.tenants)
            watched = list(self.subjects)
        try:
            for tenant in tenants if store is not None else []:
                assert store is not None
                counts = Tally(job.state for job in store.jobs(tenant))
                for state in JOB_STATES:
                    jobs.add_metric([tenant, state], counts.get(state, 0))
                subjects = [s for t, s in watched if t == tenant]
                stale.add_metric([tenant], len(visible_stale(store, tenant, subjects)))
        except Exception:  # the store is down: the other families must still be scraped
            SCRAPE_ERRORS.inc()
        yield jobs
        yield stale


STORE = StoreCollector()
REGISTRY.register(STORE)


def attach(store: Store) -> None:
    """Read the store-backed families from ``store`` (the process's own)."""
    STORE.store = store


def consolidated(
    tenant: str, result: Consolidation, seconds: float, interface: str = "http"
) -> None:
    """Record one consolidation: its latency, status, gate failures and any fallback."""
    CONSOLIDATION_SECONDS.labels(interface).observe(seconds)
    CONSOLIDATIONS.labels(str(result.status)).inc()
    for failure in result.artifact.gate.failures:
        GATE_FAILURES.labels(str(failure.code)).inc()
    if result.artifact.manifest.fallback:
        FALLBACKS.inc()
    STORE.watch(tenant, [result.artifact.subject])


@contextmanager
def timed_recall(route: str, tenant: str, subjects: Iterable[str]) -> Iterator[None]:
    """Time a recall and keep its subjects under the stale check."""
    started = time.perf_counter()
    try:
        yield
    finally:
        RECALL_SECONDS.labels(route).observe(time.perf_counter() - started)
        STORE.watch(tenant, subjects)


def serve_on(port: int, host: str = "127.0.0.1") -> None:
    """Expose the metrics on ``http://host:port/metrics`` from a background thread."""
    start_http_server(port, addr=host)
