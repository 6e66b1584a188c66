"""schemathesis against the service's own OpenAPI spec: no request makes it fail (5xx).

Bounded in examples and time; runs on SQLite over a real uvicorn.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from memlineage import Memory
from test_http import EVENTS, Service, service_on

# The routes that brought the service level with the command line: each is exercised too.
PARITY_ROUTES = {
    ("POST", "/v1/extract"),
    ("POST", "/v1/verify"),
    ("GET", "/v1/policy"),
    ("GET", "/v1/policy/history"),
    ("POST", "/v1/policy/temporal"),
    ("POST", "/v1/policy/trust"),
    ("POST", "/v1/sweep"),
    ("POST", "/v1/subjects/{subject}/detect"),
    ("POST", "/v1/jobs/run"),
    ("POST", "/v1/jobs/schedule"),
    ("GET", "/v1/jobs/settings"),
    ("POST", "/v1/jobs/settings"),
    ("GET", "/v1/artifacts"),
    ("GET", "/v1/recall"),
    ("GET", "/v1/release/configs"),
}


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    db = str(Path(tmp_path_factory.mktemp("schema")) / "memlineage.db")
    with service_on(db) as service:
        with Memory(db, tenant="acme") as memory:
            memory.add(EVENTS)
        yield service


def test_no_request_makes_the_service_fail(live: Service) -> None:
    api = schemathesis.openapi.from_url(f"{live.url}/openapi.json")
    headers = {"Authorization": f"Bearer {live.keys['acme']}"}
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) >= 10
    covered = {(op.method.upper(), op.path) for op in operations}
    assert covered >= PARITY_ROUTES, PARITY_ROUTES - covered
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
        def no_server_error(case: Any) -> None:
            case.call_and_validate(headers=headers, checks=[not_a_server_error])

        no_server_error()
