"""The raw layer can be seen: each event with its state and why, in Python, on the command
line and over HTTP, so a user who declares a conflict the raw layer already resolved
sees what happened."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from memlineage import Memory
from memlineage.interfaces.cli import main
from test_http import service_on

EVENTS = [
    {"id": "m-1", "subject": "user-7", "text": "Never deploy on Fridays.", "kind": "constraint"},
    {"id": "m-2", "subject": "user-7", "text": "I prefer window seats.", "kind": "preference"},
    {"id": "m-3", "subject": "user-7", "text": "I love jazz.", "kind": "preference",
     "at": "2026-03-02T10:00:00Z"},
    {"id": "m-4", "subject": "user-7", "text": "I hate jazz.", "kind": "preference",
     "at": "2026-03-03T10:00:00Z"},
    {"id": "m-5", "subject": "user-7", "text": "Send reports weekly."},
    {"id": "m-6", "subject": "user-7", "text": "Send reports monthly.", "supersedes": "m-5"},
    {"id": "m-7", "subject": "user-7", "text": "My phone number is 555-0100."},
    {"id": "m-8", "subject": "user-7", "text": "Meetings start at 9."},
    {"id": "m-9", "subject": "user-7", "text": "Meetings start at 10."},
]  # fmt: skip


@pytest.fixture
def memory(db_url: str) -> Iterator[Memory]:
    """These tests read the states detection decides right after an add: the synchronous mode."""
    with Memory(db_url, tenant="acme", detect_after_add=True) as mem:
        yield mem


def states(memory: Memory) -> dict[str, tuple[str, str | None]]:
    return {e.id: (e.state, e.why) for e in memory.events("user-7")}


def test_every_state_and_why(memory: Memory) -> None:
    memory.add(EVENTS)  # detection retires m-3: latest-wins for preferences
    memory.revoke("m-2", reason="user withdrew it")
    memory.trust("m-1", taint=["web"])
    memory.erase("m-7", reason="GDPR request", by="dpo")
    declared = memory.conflict("m-8", "m-9").conflict_id
    assert declared is not None
    memory.resolve(declared, "m-9")
    seen = states(memory)
    assert seen["m-1"] == ("quarantined", "quarantined by trust policy (trust user, taint web)")
    assert seen["m-2"] == ("revoked", "revoked: user withdrew it")
    state, why = seen["m-3"]
    assert state == "retired" and why is not None
    assert why.startswith("retired by the temporal policy: lost conflict ")
    assert why.endswith(" to m-4 under latest-wins for preference (temporal policy v1)")
    assert seen["m-4"] == ("valid", None)
    assert seen["m-5"] == ("superseded", "superseded by m-6")
    assert seen["m-6"] == ("valid", None)
    assert seen["m-7"] == ("erased", "erased: GDPR request")
    assert seen["m-8"] == ("lost-conflict", f"lost conflict {declared} to m-9 (resolved by hand)")
    assert [e.id for e in memory.events("user-7", valid_only=True)] == ["m-4", "m-6", "m-9"]
    assert memory.events("user-404") == []


def test_declaring_a_conflict_already_resolved_shows_what_happened(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Memory(db_url, tenant="acme", detect_after_add=True) as memory:  # already resolved
        memory.add(EVENTS[2:4])
    assert cli(db_url, "conflict", "m-3", "m-4") == 0
    capsys.readouterr()
    assert cli(db_url, "events", "user-7") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("m-3  retired       I love jazz.  (retired by the temporal policy")
    assert lines[1].startswith("m-4  valid         I hate jazz.  (contested: unresolved conflict")
    assert cli(db_url, "events", "user-7", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(e["id"], e["state"]) for e in doc["events"]] == [("m-3", "retired"), ("m-4", "valid")]
    assert cli(db_url, "events", "user-404") == 2
    assert "no subject 'user-404'" in capsys.readouterr().err


def test_http_lists_the_events_with_their_state(db_url: str) -> None:
    with service_on(db_url) as service, service.client() as http:
        http.post("/v1/events", json={"events": EVENTS[2:6]})
        http.post("/v1/events/m-6/revoke", json={})
        body: dict[str, Any] = http.get("/v1/subjects/user-7/events").json()
        assert [(e["id"], e["state"]) for e in body["events"]] == [
            ("m-3", "retired"),
            ("m-4", "valid"),
            ("m-5", "superseded"),
            ("m-6", "revoked"),
        ]
        assert http.get("/v1/subjects/user-404/events").status_code == 404
        with service.client(tenant="other") as other:
            assert other.get("/v1/subjects/user-7/events").status_code == 404


def cli(db: str, *argv: str) -> int:
    return main([*argv, "--db", db, "--tenant", "acme"], stdout=None)
