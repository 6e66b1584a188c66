"""The HTTP service over a real uvicorn on 127.0.0.1, on both backends.

Keys scope a tenant: a missing, unknown or revoked key is 401; another tenant's
subject, artifact or event is 404, the same answer as a missing one.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import uvicorn

from memlineage import Memory
from memlineage.interfaces.http import create_app

EVENTS = [
    {"id": "m-1", "subject": "user-7", "text": "Never deploy on Fridays.", "kind": "constraint"},
    {"id": "m-2", "subject": "user-7", "text": "I love jazz."},
    {"id": "m-3", "subject": "user-7", "text": "Jazz gets on my nerves."},
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Service:
    url: str
    keys: dict[str, str]  # tenant -> key
    db: str

    def client(self, tenant: str | None = "acme", key: str | None = None) -> httpx.Client:
        headers = {}
        token = key if key is not None else (self.keys[tenant] if tenant else None)
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


@pytest.fixture
def service(db_url: str) -> Iterator[Service]:
    with service_on(db_url) as running:
        yield running


@contextlib.contextmanager
def service_on(db_url: str) -> Iterator[Service]:
    """A real uvicorn on a free port of 127.0.0.1, with a key for tenants acme and other."""
    keys = {}
    for tenant in ("acme", "other"):
        with Memory(db_url, tenant=tenant) as memory:
            keys[tenant] = memory.create_key(label="test")[1]
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(db_url, max_body_bytes=64 * 1024),
            host="127.0.0.1",
            port=port,
            log_level="warning",
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield Service(f"http://127.0.0.1:{port}", keys, db_url)
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def seed(service: Service) -> None:
    with service.client() as http:
        response = http.post("/v1/events", json={"events": EVENTS})
        assert response.status_code == 200, response.text
        assert response.json()["appended"] == 3


def test_health_reports_the_schema_version_without_a_key(service: Service) -> None:
    with service.client(tenant=None) as http:
        body = http.get("/health").json()
    assert body["status"] == "ok" and body["schema_version"] >= 1


def test_every_endpoint_for_its_own_tenant(service: Service) -> None:
    seed(service)
    with service.client() as http:
        recall = http.get("/v1/subjects/user-7/recall").json()
        assert recall["mode"] == "raw" and [e["id"] for e in recall["events"]] == [
            "m-1",
            "m-2",
            "m-3",
        ]
        conflict = http.post("/v1/conflicts", json={"a": "m-2", "b": "m-3", "key": "jazz"})
        assert conflict.status_code == 200 and conflict.json()["changed"] is True
        conflict_id = conflict.json()["conflict_id"]
        done = http.post("/v1/subjects/user-7/consolidate", json={}).json()
        assert done["switched"] is True, done
        recall = http.get("/v1/subjects/user-7/recall").json()
        assert recall["mode"] == "summary" and recall["artifact_id"] == done["artifact_id"]
        listed = http.get("/v1/subjects/user-7/artifacts").json()
        assert [a["artifact_id"] for a in listed] == [done["artifact_id"]]
        one = http.get(f"/v1/artifacts/{done['artifact_id']}").json()
        assert one["status"] == "published"
        assert http.get("/v1/subjects").json() == ["user-7"]
        resolved = http.post(f"/v1/conflicts/{conflict_id}/resolve", json={"winner": "m-3"})
        assert resolved.status_code == 200 and resolved.json()["changed"] is True
        trust = http.post("/v1/events/m-1/trust", json={"level": "agent"})
        assert trust.status_code == 200
        revoked = http.post("/v1/events/m-1/revoke", json={"reason": "test"}).json()
        assert revoked["changed"] is True
        assert http.get("/v1/subjects/user-7/recall").json()["mode"] == "raw"


CROSS_TENANT = [
    ("get", "/v1/subjects/user-7/recall", None),
    ("get", "/v1/subjects/user-7/artifacts", None),
    ("post", "/v1/subjects/user-7/consolidate", {}),
    ("post", "/v1/events/m-1/revoke", {}),
    ("post", "/v1/events/m-1/trust", {"level": "agent"}),
    ("post", "/v1/conflicts", {"a": "m-2", "b": "m-3"}),
]


@pytest.mark.parametrize(("method", "path", "body"), CROSS_TENANT)
def test_another_tenants_data_is_404_like_a_missing_one(
    service: Service, method: str, path: str, body: dict[str, Any] | None
) -> None:
    seed(service)
    with service.client("other") as http:
        response = http.request(method, path, json=body)
        missing = http.request(
            method, path.replace("user-7", "nobody").replace("m-", "x-"), json=body
        )
    assert response.status_code == 404, response.text
    assert missing.status_code == 404
    assert response.json()["error"]["type"] == missing.json()["error"]["type"] == "NotFound"
    with Memory(service.db, tenant="acme") as memory:  # nothing changed for the owner
        assert memory.recall("user-7").mode == "raw"
        assert [e.id for e in memory.recall("user-7").events] == ["m-1", "m-2", "m-3"]
        assert memory.artifacts("user-7") == []


def test_another_tenants_artifact_and_conflict_are_404(service: Service) -> None:
    seed(service)
    with service.client() as http:
        conflict_id = http.post("/v1/conflicts", json={"a": "m-2", "b": "m-3"}).json()[
            "conflict_id"
        ]
        artifact_id = http.post("/v1/subjects/user-7/consolidate", json={}).json()["artifact_id"]
    with service.client("other") as http:
        assert http.get(f"/v1/artifacts/{artifact_id}").status_code == 404
        resolve = http.post(f"/v1/conflicts/{conflict_id}/resolve", json={"winner": "m-2"})
        assert resolve.status_code == 404


@pytest.mark.parametrize("key", [None, "mlk_nothere_abc", "not-even-a-key", "mlk_x_y z"])
def test_missing_or_unknown_keys_are_401(service: Service, key: str | None) -> None:
    with service.client(tenant=None, key=key) as http:
        response = http.get("/v1/subjects")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]["code"] == 2


def test_a_revoked_key_is_401_from_then_on(service: Service) -> None:
    with Memory(service.db, tenant="acme") as memory:
        key_id, key = memory.create_key()
    with service.client(key=key) as http:
        assert http.get("/v1/subjects").status_code == 200
        with Memory(service.db, tenant="acme") as memory:
            assert memory.revoke_key(key_id) is True
        assert http.get("/v1/subjects").status_code == 401


def test_oversized_and_malformed_bodies_are_refused_and_change_nothing(service: Service) -> None:
    big = [{"id": f"b-{i}", "subject": "user-7", "text": "x" * 1000} for i in range(100)]
    with service.client() as http:
        assert http.post("/v1/events", json={"events": big}).status_code == 413
        malformed = http.post(
            "/v1/events", content=b"{not json", headers={"content-type": "application/json"}
        )
        assert malformed.status_code == 400 and malformed.json()["error"]["code"] == 2
        bad_event = http.post(
            "/v1/events", json={"events": [EVENTS[0], {"id": "m-9", "subject": "user-7"}]}
        )
        assert bad_event.status_code == 400
        assert "text" in bad_event.json()["error"]["message"]
        assert http.get("/v1/subjects").json() == []


def test_lineage_why_audit_context_erase_jobs_eval_release_and_review(service: Service) -> None:
    seed(service)
    with service.client() as http:
        done = http.post("/v1/subjects/user-7/consolidate", json={"budget": 300}).json()
        artifact = done["artifact_id"]
        context = http.get("/v1/subjects/user-7/context", params={"query": "deploy", "budget": 100})
        assert context.status_code == 200 and "Never deploy on Fridays." in context.text
        prov = http.get(f"/v1/artifacts/{artifact}/lineage").json()
        assert "entity" in prov and "activity" in prov
        dot = http.get(f"/v1/artifacts/{artifact}/lineage", params={"format": "dot"})
        assert dot.text.startswith("digraph")
        why = http.get("/v1/subjects/user-7/why", params={"q": "Fridays"}).json()
        assert why["matches"]
        assert http.get("/v1/subjects/user-7/audit").status_code == 200
        erased = http.post("/v1/events/m-1/erase", json={"reason": "GDPR", "by": "dpo"}).json()
        assert erased["changed"] is True and erased["stale"] == [artifact]
        assert "Never deploy" not in http.get("/v1/subjects/user-7/recall").text
        queued = http.post("/v1/jobs", json={"subjects": ["user-7"]}).json()
        assert [j["subject"] for j in queued] == ["user-7"]
        assert http.post("/v1/eval", json={}).json()["passed"] is True
        assert http.post("/v1/release", json={"mode": "shadow"}).json() == {"mode": "shadow"}
        waiting = http.post("/v1/subjects/user-7/consolidate", json={}).json()
        [review] = http.get("/v1/reviews").json()
        assert review["artifact_id"] == waiting["artifact_id"]
        sheet = http.get(f"/v1/reviews/{review['artifact_id']}").json()
        assert sheet["gate"]["passed"] is True
        approved = http.post(
            f"/v1/reviews/{review['artifact_id']}/approve", json={"reviewer": "ana"}
        ).json()
        assert approved["state"] == "approved"
        assert http.get("/v1/subjects/user-7/recall").json()["mode"] == "summary"
    with service.client("other") as http:  # another tenant sees none of it
        assert http.get(f"/v1/artifacts/{artifact}/lineage").status_code == 404
        assert http.post("/v1/events/m-2/erase", json={"reason": "x"}).status_code == 404
        assert http.get("/v1/subjects/user-7/why", params={"q": "jazz"}).status_code == 404
        assert http.get(f"/v1/reviews/{review['artifact_id']}").status_code == 404
