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
from hypothesis import strategies as st
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


HOSTILE_STRINGS = ["\ud800", "lone \udc80 low", "a\x00b", "\x1b]0;PWNED\x07\x1b[2J", "\x7f\x9b"]


def _strings(value: Any) -> int:
    if isinstance(value, str):
        return 1
    if isinstance(value, dict):
        return sum(_strings(v) for v in value.values())
    if isinstance(value, list):
        return sum(_strings(v) for v in value)
    return 0


def _poison(value: Any, index: int, bad: str, seen: list[int]) -> Any:
    """``value`` with its ``index``-th string (depth first) replaced by ``bad``."""
    if isinstance(value, str):
        seen[0] += 1
        return bad if seen[0] - 1 == index else value
    if isinstance(value, dict):
        return {k: _poison(v, index, bad, seen) for k, v in value.items()}
    if isinstance(value, list):
        return [_poison(v, index, bad, seen) for v in value]
    return value


def test_hostile_strings_in_any_field_are_never_a_server_error(live: Service) -> None:
    """One string of each generated body (or query) made a lone surrogate, NUL or a run of
    control characters: a 400 at worst, never a 5xx. A URL cannot carry a lone surrogate,
    so queries get the others."""
    api = schemathesis.openapi.from_url(f"{live.url}/openapi.json")
    headers = {"Authorization": f"Bearer {live.keys['acme']}"}
    for operation in [result.ok() for result in api.get_all_operations()]:

        @given(
            case=operation.as_strategy(),
            bad=st.sampled_from(HOSTILE_STRINGS),
            pick=st.integers(0, 50),
        )
        @settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
        def no_server_error(case: Any, bad: str, pick: int) -> None:
            body = getattr(case, "body", None)
            if isinstance(body, dict | list) and _strings(body):
                case.body = _poison(body, pick % _strings(body), bad, [0])
            elif case.query and _strings(case.query):
                safe = bad.encode("utf-8", "replace").decode("utf-8")
                case.query = _poison(dict(case.query), pick % _strings(case.query), safe, [0])
            case.call_and_validate(headers=headers, checks=[not_a_server_error])

        no_server_error()
