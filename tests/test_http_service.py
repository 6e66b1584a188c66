"""The HTTP service explains itself, over a real uvicorn: where it listens, a log line per
request, an OpenAPI document that describes every operation, its bearer security and the
errors it really answers, and ``/docs`` that works without a network."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

import memlineage
from memlineage import Memory
from test_http import EVENTS, Service, free_port, seed, service_on

SRC = str(Path(memlineage.__file__).resolve().parents[1])
CLI = "import sys; from memlineage.interfaces.cli import main; sys.exit(main())"
CHROMIUM = shutil.which("chromium")


@pytest.fixture
def service(db_url: str) -> Any:
    with service_on(db_url) as running:
        yield running


def serve(db: str, *options: str) -> tuple[str, str]:
    """Run ``memlineage serve`` as a user does, make one request, stop it with Ctrl-C."""
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, "-c", CLI, "serve", "--db", db, "--port", str(port), *options],
        env={**os.environ, "PYTHONPATH": SRC},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while True:
        assert time.monotonic() < deadline and child.poll() is None, "serve did not start"
        try:
            assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
            break
        except httpx.TransportError:
            time.sleep(0.1)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    return out, err.replace(str(port), "PORT")


def test_serve_says_where_it_listens_and_logs_each_request(tmp_path: Path) -> None:
    out, err = serve(str(tmp_path / "m.db"))
    assert err.splitlines()[0] == (
        "memlineage: serving http://127.0.0.1:PORT (API docs http://127.0.0.1:PORT/docs,"
        " review page http://127.0.0.1:PORT/review, metrics http://127.0.0.1:PORT/metrics,"
        " MCP http://127.0.0.1:PORT/mcp); Ctrl-C stops"
    )
    # uvicorn's access log, on stdout as uvicorn writes it: one line per request
    assert re.fullmatch(r'INFO: +127\.0\.0\.1:\d+ - "GET /health HTTP/1\.1" 200 OK\n', out), out


def test_serve_log_level_warning_logs_no_requests(tmp_path: Path) -> None:
    out, err = serve(str(tmp_path / "m.db"), "--log-level", "warning")
    assert out == "" and err.startswith("memlineage: serving")


def openapi(service: Service) -> dict[str, Any]:
    document: dict[str, Any] = httpx.get(f"{service.url}/openapi.json").json()
    return document


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m.upper(), p, op) for p, ops in doc["paths"].items() for m, op in ops.items()]


def test_every_operation_is_described_and_keyed_ones_declare_bearer(service: Service) -> None:
    doc = openapi(service)
    assert doc["components"]["securitySchemes"]["apiKey"] == {
        "type": "http",
        "scheme": "bearer",
        "description": (
            "A tenant's API key (`memlineage keys create`): `Authorization: Bearer KEY`."
        ),
    }
    found = operations(doc)
    assert len(found) >= 42
    for method, path, op in found:
        assert op.get("summary") and op.get("description"), (method, path)
        keyed = path != "/health"
        assert (op.get("security") == [{"apiKey": []}]) is keyed, (method, path)
        assert ("401" in op["responses"]) is keyed, (method, path)
        assert "422" not in op["responses"], (method, path)
        for status, answer in op["responses"].items():
            if status != "200":
                schema = answer["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorOut"}, (method, path)
    assert "HTTPValidationError" not in doc["components"]["schemas"]


def declared(doc: dict[str, Any], method: str, path: str) -> set[str]:
    return set(doc["paths"][path][method.lower()]["responses"])


def error_of(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "type", "message"}
    return body["error"]


def test_the_errors_it_gives_are_the_ones_it_declares(service: Service) -> None:
    seed(service)
    doc = openapi(service)
    with service.client() as http:
        invalid = http.get("/v1/subjects/user-7/recall", params={"budget": 0})
        assert invalid.status_code == 400 and error_of(invalid)["code"] == 2
        assert "400" in declared(doc, "GET", "/v1/subjects/{subject}/recall")
        missing = http.get("/v1/subjects/nobody/recall")
        assert missing.status_code == 404 and error_of(missing)["type"] == "NotFound"
        assert "404" in declared(doc, "GET", "/v1/subjects/{subject}/recall")
        other = dict(EVENTS[0], text="Deploy whenever you like.")
        clash = http.post("/v1/events", json={"events": [other]})
        assert clash.status_code == 409 and error_of(clash)["type"] == "DuplicateEventId"
        assert "409" in declared(doc, "POST", "/v1/events")
        big = [{"id": f"b-{i}", "subject": "u", "text": "x" * 1000} for i in range(100)]
        too_big = http.post("/v1/events", json={"events": big})
        assert too_big.status_code == 413 and error_of(too_big)["type"] == "BodyTooLarge"
        assert "413" in declared(doc, "POST", "/v1/events")
    with service.client(tenant=None) as anonymous:
        refused = anonymous.get("/v1/subjects")
        assert refused.status_code == 401 and error_of(refused)["type"] == "Unauthorized"
    with Memory(service.db, tenant="acme") as memory:  # the clash stored nothing
        assert memory.events("user-7")[0].text == EVENTS[0]["text"]


def test_consolidate_needs_no_body(service: Service) -> None:
    seed(service)
    with service.client() as http:
        done = http.post("/v1/subjects/user-7/consolidate")
        assert done.status_code == 200, done.text
        assert done.json()["switched"] is True
        again = http.post("/v1/subjects/user-7/consolidate", json={"force": True})
        assert (
            again.status_code == 200 and again.json()["artifact_id"] != done.json()["artifact_id"]
        )


def test_docs_page_references_no_outside_host(service: Service) -> None:
    page = httpx.get(f"{service.url}/docs")
    assert page.status_code == 200
    references = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert len(references) == 3, references  # script, style, icon
    assert "http" not in page.text.split("<body>")[1].replace("/openapi.json", "")
    for reference in references:
        assert reference.startswith("/docs/assets/"), reference
        assert httpx.get(f"{service.url}{reference}").status_code == 200


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium on this machine")
def test_docs_render_offline_with_an_authorize_button(service: Service) -> None:
    from playwright.sync_api import Route, sync_playwright

    outside: list[str] = []

    def only_the_service(route: Route) -> None:
        if route.request.url.startswith(service.url):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    with sync_playwright() as play:
        browser = play.chromium.launch(executable_path=CHROMIUM)
        page = browser.new_page()
        page.route("**/*", only_the_service)
        page.goto(f"{service.url}/docs")
        page.wait_for_selector(".opblock", timeout=30_000)
        assert page.locator(".opblock").count() == len(operations(openapi(service)))
        assert page.locator("button.authorize").count() == 1
        browser.close()
    assert outside == []
