"""Prometheus metrics, scraped from the real endpoints: ``/metrics`` of a real uvicorn, and
``worker --metrics-port`` of a real worker process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

import memlineage
from memlineage import Memory
from test_http import EVENTS, Service, free_port, seed, service_on

SRC = str(Path(memlineage.__file__).resolve().parents[1])
TESTS = str(Path(__file__).resolve().parent)
CLI = "import sys; from memlineage.interfaces.cli import main; sys.exit(main())"

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> Samples:
    text = httpx.get(url, timeout=10).text
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def total(samples: Samples, name: str) -> float:
    return sum(v for (n, _), v in samples.items() if n == name)


@pytest.fixture
def service(db_url: str) -> Service:
    with service_on(db_url) as running:
        yield running  # type: ignore[misc]


def test_serve_exposes_latency_jobs_and_no_visible_stale_summary(service: Service) -> None:
    seed(service)
    before = scrape(f"{service.url}/metrics")
    with service.client() as http:
        assert http.post("/v1/subjects/user-7/consolidate").json()["switched"] is True
        assert http.get("/v1/subjects/user-7/recall").json()["mode"] == "summary"
        http.get("/v1/subjects/user-7/context", params={"query": "deploy"})
        http.post("/v1/jobs", json={"subjects": ["user-7"]})
        assert http.post("/v1/events/m-1/revoke", json={}).json()["changed"] is True
        assert http.get("/v1/subjects/user-7/recall").json()["mode"] == "raw"
    after = scrape(f"{service.url}/metrics")

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("memlineage_consolidation_seconds_count", interface="http") == 1
    assert grew("memlineage_consolidations_total", status="published") == 1
    assert grew("memlineage_recall_seconds_count", route="recall") == 2
    assert grew("memlineage_recall_seconds_count", route="context") == 1
    assert value(after, "memlineage_jobs", tenant="acme", state="queued") == 1
    assert value(after, "memlineage_jobs", tenant="acme", state="dead") == 0
    assert ("memlineage_stale_artifacts_visible", (("tenant", "acme"),)) in after
    assert value(after, "memlineage_stale_artifacts_visible", tenant="acme") == 0
    assert httpx.get(f"{service.url}/metrics").headers["content-type"].startswith("text/plain")


def test_worker_exposes_gate_failures_by_code_on_its_metrics_port(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with Memory(db, tenant="acme") as memory:
        memory.add(EVENTS)
        memory.queue(["user-7"])
    port = free_port()
    worker = subprocess.Popen(
        [
            *[sys.executable, "-c", CLI, "worker", "--db", db, "--tenant", "acme"],
            *["--poll", "0.2", "--metrics-port", str(port)],
            *["--generator", "fault_generators:MissingField"],
        ],
        env={**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{TESTS}"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        samples = _until_a_job_ran(f"http://127.0.0.1:{port}/metrics", worker)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=60)
    with Memory(db, tenant="acme") as memory:
        [artifact] = memory.artifacts("user-7")
    codes = [f.code for f in artifact.gate.failures]
    assert codes, "the fault generator's output should fail the gate"
    for code in set(codes):
        assert value(samples, "memlineage_gate_failures_total", code=code) == codes.count(code)
    assert value(samples, "memlineage_consolidation_seconds_count", interface="worker") == 1
    assert total(samples, "memlineage_worker_jobs_total") == 1
    assert ("memlineage_jobs", (("state", "queued"), ("tenant", "acme"))) in samples
    assert value(samples, "memlineage_generator_fallbacks_total") == 0


def _until_a_job_ran(url: str, worker: subprocess.Popen[str]) -> Samples:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert worker.poll() is None, worker.stderr.read() if worker.stderr else ""
        try:
            samples = scrape(url)
        except httpx.TransportError:
            samples = {}
        if total(samples, "memlineage_worker_jobs_total") >= 1:
            return samples
        time.sleep(0.2)
    raise AssertionError("the worker ran no job within 60 s")
