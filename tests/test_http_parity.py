"""Every command of the contract over HTTP (docs/interfaces.md), on a real uvicorn, both backends.

The commands the command line had and the service lacked: extract, verify, policy,
sweep, detect, a bounded run of queued jobs (the worker), jobs schedule and settings,
the tenant's artifacts, recall over several subjects, release configs, every review,
eval with gold facts. Each answers what the command line's ``--json`` prints, sees
only the key's tenant, is 401 without a valid key and refuses bad input with the
command line's code, changing nothing.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from memlineage import Memory
from memlineage.consolidation.consolidate import prepare
from memlineage.interfaces.cli import main, root
from memlineage.interfaces.http import create_app
from test_http import EVENTS, Service, seed, service_on

NEGATION_AND_NUMBER = {
    "id": "e-1",
    "subject": "user-7",
    "text": "I do not eat meat. My commute is 12 km.",
}
OPERA = [
    {"id": "o-1", "subject": "user-9", "text": "I love opera."},
    {"id": "o-2", "subject": "user-9", "text": "I hate opera now."},
]


@pytest.fixture
def service(db_url: str) -> Iterator[Service]:
    with service_on(db_url) as running:
        yield running


def cli(*argv: str) -> Any:
    """What ``memlineage ... --json`` prints."""
    out = io.StringIO()
    main([*argv, "--json"], stdout=out)
    return json.loads(out.getvalue())


def bulk_load(service: Service, tenant: str, events: list[dict[str, Any]]) -> None:
    """Events added the way a bulk loader does: without the detection job after the add."""
    with Memory(service.db, tenant=tenant, detect_after_add=False) as memory:
        memory.add(events)


def test_extract_gives_the_items_of_posted_events_and_stores_nothing(
    service: Service, tmp_path: Path
) -> None:
    with service.client() as http:
        response = http.post("/v1/extract", json={"events": [NEGATION_AND_NUMBER]})
        assert response.status_code == 200, response.text
        assert http.get("/v1/subjects").json() == []
    items = response.json()["items"]
    assert [(i["source"], i["kind"], i["value"], i["unit"], i["polarity"]) for i in items] == [
        ("e-1", "negation", "i do not eat meat", None, False),
        ("e-1", "number", 12, "kilometer", True),
    ]
    path = tmp_path / "events.jsonl"
    path.write_text(json.dumps(NEGATION_AND_NUMBER) + "\n", encoding="utf-8")
    assert response.json() == cli("extract", str(path))


def test_extract_names_the_bad_event_like_add(service: Service) -> None:
    with service.client() as http:
        response = http.post(
            "/v1/extract", json={"events": [NEGATION_AND_NUMBER, {"id": "e-2", "subject": "s"}]}
        )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == 2 and error["type"] == "BadInput"
    assert "line 2" in error["message"] and "text" in error["message"]


def test_verify_certifies_the_built_in_generator(service: Service) -> None:
    with service.client() as http:
        response = http.post("/v1/verify", json={})
        named = http.post("/v1/verify", json={"generator": "deterministic"})
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["certified"] is True and doc["failedSamples"] == []
    assert doc["generator"]["name"] == "deterministic"
    assert doc["totals"]["rows"] == doc["totals"]["passed"] == len(doc["rows"]) > 0
    by_cli = cli("verify", "--generator", "deterministic", "--db", service.db)

    def rows(found: dict[str, Any]) -> list[tuple[str, str, bool]]:
        return [(r["sample"], r["check"], r["passed"]) for r in found["rows"]]

    assert rows(doc) == rows(by_cli) == rows(named.json())
    assert doc["generator"] == by_cli["generator"]


def test_a_policy_change_shows_in_the_policy_its_history_and_what_recall_admits(
    service: Service,
) -> None:
    seed(service)
    scraped = {"id": "w-1", "subject": "user-7", "text": "The wiki says we move.", "taint": ["web"]}
    with service.client() as http:
        http.post("/v1/events", json={"events": [scraped]})
        before = http.get("/v1/policy").json()
        assert before["temporal"] == {
            "version": 1,
            "rules": {"preference": "latest-wins"},
            "default": "keep",
        }
        assert before["trust"]["version"] == 1 and before["trust"]["blockedTaints"] is None
        assert "w-1" not in ids(http.get("/v1/subjects/user-7/recall").json())

        temporal = http.post(
            "/v1/policy/temporal", json={"rules": ["preference=keep"], "reason": "both sides"}
        )
        assert temporal.status_code == 200, temporal.text
        assert temporal.json() == {"version": 2, "rules": {"preference": "keep"}, "default": "keep"}
        trust = http.post("/v1/policy/trust", json={"block": ["injection"], "batch": 1})
        assert trust.status_code == 200, trust.text
        changed = trust.json()
        assert changed["version"] == 2 and changed["blockedTaints"] == ["injection"]
        assert changed["remaining"] == 0
        assert [a["subject"] for b in changed["batches"] for a in b["affected"]] == ["user-7"]

        after = http.get("/v1/policy").json()
        assert after["temporal"]["version"] == 2 and after["temporal"]["rules"] == {
            "preference": "keep"
        }
        assert after["trust"] == {
            "version": 2,
            "admittedTrust": ["agent", "external", "tool", "user"],
            "blockedTaints": ["injection"],
        }
        assert "w-1" in ids(http.get("/v1/subjects/user-7/recall").json())  # 'web' readmitted
        history = http.get("/v1/policy/history").json()
        assert [(v["name"], v["version"], v["reason"]) for v in history] == [
            ("temporal", 2, "both sides"),
            ("trust", 2, None),
        ]
        assert after == cli("policy", "show", "--db", service.db, "--tenant", "acme")
        assert history == cli("policy", "history", "--db", service.db, "--tenant", "acme")

        http.post("/v1/events", json={"events": OPERA})  # a preference reversal, now kept
        http.post("/v1/subjects/user-9/detect")  # the add left detection to a worker
        [conflict] = http.get("/v1/subjects/user-9/recall").json()["conflicts"]
        assert {conflict["a"], conflict["b"]} == {"o-1", "o-2"}
    with service.client("other") as http:  # the other tenant's policies did not move
        assert http.get("/v1/policy").json() == before
        assert http.get("/v1/policy/history").json() == []


def ids(recall: dict[str, Any]) -> list[str]:
    return [e["id"] for e in recall["events"]]


def test_detect_finds_a_reversal_loaded_without_detection(service: Service) -> None:
    bulk_load(service, "acme", OPERA)
    with service.client() as http:
        response = http.post("/v1/subjects/user-9/detect")
        again = http.post("/v1/subjects/user-9/detect")
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["subject"] == "user-9" and doc["detected_through"] == 2
    [found] = doc["conflicts"]
    assert (found["a"], found["b"], found["key"]) == ("o-1", "o-2", "global/clause/opera")
    assert found["rule"] == "opposite-polarity" and found["winner"] == "o-2"
    assert again.json() == {"subject": "user-9", "detected_through": 2, "conflicts": []}
    assert again.json() == cli("detect", "user-9", "--db", service.db, "--tenant", "acme")


def test_jobs_run_runs_queued_consolidations_then_recall_serves_the_summary(
    service: Service,
) -> None:
    seed(service)
    with service.client() as http:
        http.post("/v1/events", json={"events": OPERA})
        queued = http.post("/v1/jobs", json={"subjects": ["user-7", "user-9"]})
        assert [j["state"] for j in queued.json()] == ["queued", "queued"]
        one = http.post("/v1/jobs/run", json={"max_jobs": 1})
        assert one.status_code == 200, one.text
        assert one.json()["jobs"] == 1 and one.json()["outcomes"] == {"published": 1}
        [first] = one.json()["reports"]
        assert first["tenant"] == "acme" and first["state"] == "done"
        assert len(http.get("/v1/jobs", params={"state": "queued"}).json()) == 1
        rest = http.post("/v1/jobs/run", json={}).json()
        assert rest["jobs"] == 1 and rest["outcomes"] == {"published": 1}
        assert http.post("/v1/jobs/run", json={}).json() == {
            "jobs": 0,
            "outcomes": {},
            "reports": [],
        }
        recall = http.get("/v1/subjects/user-7/recall").json()
        ran = {r["subject"]: r["artifact_id"] for r in [first, *rest["reports"]]}
        assert recall["mode"] == "summary" and recall["artifact_id"] == ran["user-7"]
        assert "Never deploy on Fridays." in recall["summary"]
        done = http.get("/v1/jobs", params={"state": "done"}).json()
        assert sorted(j["subject"] for j in done) == ["user-7", "user-9"]


def test_jobs_schedule_and_settings(service: Service) -> None:
    seed(service)
    with service.client() as http:
        assert http.get("/v1/jobs/settings").json() == {"tail_threshold": 100}
        assert http.post("/v1/jobs/settings", json={"tail_threshold": 2}).json() == {
            "tail_threshold": 2
        }
        assert http.get("/v1/jobs/settings").json() == {"tail_threshold": 2}
        scheduled = http.post("/v1/jobs/schedule").json()
        assert [(j["subject"], j["state"]) for j in scheduled] == [("user-7", "queued")]
    with service.client("other") as http:
        assert http.get("/v1/jobs/settings").json() == {"tail_threshold": 100}
        assert http.get("/v1/jobs").json() == []
        seeded = http.post("/v1/events", json={"events": OPERA})
        assert seeded.status_code == 200
        assert http.post("/v1/jobs/schedule").json()[0]["subject"] == "user-9"
    with service.client() as http:  # acme's queue never holds the other tenant's subject
        assert [j["subject"] for j in http.get("/v1/jobs").json()] == ["user-7"]


def test_sweep_fails_the_tenants_orphaned_candidates_only(service: Service) -> None:
    orphans = {}
    for tenant in ("acme", "other"):
        with Memory(service.db, tenant=tenant) as memory:
            memory.add(EVENTS)
            orphans[tenant] = prepare(memory.store, tenant, "user-7").id  # a crashed run
            memory.conflict("m-2", "m-3", key="jazz")  # the epoch moves: it can never switch
    with service.client() as http:
        response = http.post("/v1/sweep", json={})
        assert response.status_code == 200, response.text
        [swept] = response.json()["failed"]
        assert (swept["subject"], swept["artifact_id"]) == ("user-7", orphans["acme"])
        assert swept["reason"].startswith("orphaned: epoch is")
        assert http.post("/v1/sweep", json={"older_than": 0}).json() == {"failed": []}
        [artifact] = http.get("/v1/artifacts").json()
        assert artifact["status"] == "failed"
    with Memory(service.db, tenant="other") as memory:
        assert str(memory.artifact(orphans["other"]).status) == "candidate"


def test_the_tenants_artifacts_recall_of_several_subjects_configs_and_decided_reviews(
    service: Service, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # no configuration file around: the first consolidation would record its settings
    monkeypatch.delenv("MEMLINEAGE_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    seed(service)
    with service.client() as http:
        http.post("/v1/events", json={"events": OPERA})
        first = http.post("/v1/subjects/user-7/consolidate", json={}).json()["artifact_id"]
        second = http.post("/v1/subjects/user-9/consolidate", json={}).json()["artifact_id"]
        listed = http.get("/v1/artifacts").json()
        assert sorted(a["artifact_id"] for a in listed) == sorted([first, second])
        both = http.get(
            "/v1/recall", params={"subject": ["user-7", "user-9"], "query": "opera", "budget": 400}
        )
        assert both.status_code == 200, both.text
        recalls = both.json()["subjects"]
        assert [r["subject"] for r in recalls] == ["user-7", "user-9"]
        assert all(r["artifact_id"] in (first, second) for r in recalls)
        # a budget returns what it allows (the context); the claims only when asked
        assert both.json()["context"] and not any("summary" in r or "claims" in r for r in recalls)
        asked = http.get(
            "/v1/recall",
            params={"subject": ["user-7"], "query": "opera", "budget": 400, "include_claims": True},
        ).json()["subjects"]
        assert asked[0]["claims"] and "summary" in asked[0]
        assert http.get("/v1/release/configs").json() == []
        with Memory(service.db, tenant="acme") as memory:  # an operator's rollout (CLI only)
            memory.rollout({"generator": "deterministic"})
        [config] = http.get("/v1/release/configs").json()
        assert config["version"] == 1 and config["config"] == {"generator": "deterministic"}
        assert [config] == cli("release", "configs", "--db", service.db, "--tenant", "acme")
        http.post("/v1/release", json={"mode": "shadow"})
        http.post("/v1/events", json={"events": [{**EVENTS[0], "id": "m-4", "text": "Ship."}]})
        waiting = http.post("/v1/subjects/user-7/consolidate", json={}).json()["artifact_id"]
        http.post(f"/v1/reviews/{waiting}/reject", json={"reviewer": "ana", "reason": "no"})
        assert http.get("/v1/reviews").json() == []
        [decided] = http.get("/v1/reviews", params={"all": True}).json()
        assert decided["artifact_id"] == waiting and decided["state"] == "rejected"
    with service.client("other") as http:
        assert http.get("/v1/artifacts").json() == []
        assert http.get("/v1/release/configs").json() == []
        assert http.get("/v1/reviews", params={"all": True}).json() == []


def test_eval_with_gold_facts_and_without_saving(service: Service) -> None:
    seed(service)
    gold = [{"event": "m-1", "value": "Never deploy on Fridays."}]
    with service.client() as http:
        response = http.post("/v1/eval", json={"gold": gold, "save": False})
        assert response.status_code == 200, response.text
        assert response.json()["run_id"] is None
        bad = http.post("/v1/eval", json={"gold": [{"event": "m-1", "colour": "red"}]})
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == 2 and "colour" in bad.json()["error"]["message"]


# Another tenant's subject is 404, the same answer as a missing one.
CROSS_TENANT = [
    ("post", "/v1/subjects/user-9/detect", []),
    ("get", "/v1/recall", [("subject", "user-9")]),
    ("get", "/v1/recall", [("subject", "nobody-else"), ("subject", "user-9")]),
]


@pytest.mark.parametrize(("method", "path", "params"), CROSS_TENANT)
def test_another_tenants_subject_is_404_like_a_missing_one(
    service: Service, method: str, path: str, params: list[tuple[str, str]]
) -> None:
    bulk_load(service, "acme", OPERA)

    def missing(text: str) -> str:
        return text.replace("user-9", "nobody-9")

    with service.client("other") as http:
        response = http.request(method, path, params=params)
        absent = http.request(method, missing(path), params=[(k, missing(v)) for k, v in params])
    assert response.status_code == absent.status_code == 404, response.text
    assert response.json()["error"]["type"] == absent.json()["error"]["type"] == "NotFound"
    assert response.json()["error"]["code"] == 2
    with Memory(service.db, tenant="acme") as memory:  # nothing ran for the owner
        assert memory.detect("user-9").conflicts  # its detection is still to run


def test_another_tenants_queued_job_is_not_run(service: Service) -> None:
    with Memory(service.db, tenant="other") as memory:
        memory.add(EVENTS)
        memory.queue(["user-7"])
    with service.client() as http:
        assert http.post("/v1/jobs/run", json={"max_jobs": 100}).json()["jobs"] == 0
        assert http.get("/v1/jobs").json() == []
    with Memory(service.db, tenant="other") as memory:
        assert [j.state for j in memory.jobs()] == ["queued"]
        assert memory.artifacts() == []


def test_extract_of_another_tenants_events_reads_and_stores_nothing(service: Service) -> None:
    seed(service)
    with service.client("other") as http:
        response = http.post("/v1/extract", json={"events": EVENTS})
        assert response.status_code == 200
        assert {i["source"] for i in response.json()["items"]} <= {"m-1", "m-2", "m-3"}
        assert http.get("/v1/subjects").json() == []
    with Memory(service.db, tenant="acme") as memory:
        assert [e.id for e in memory.events("user-7")] == ["m-1", "m-2", "m-3"]


NEW_ENDPOINTS = [
    ("post", "/v1/extract", {"events": [NEGATION_AND_NUMBER]}),
    ("post", "/v1/verify", {}),
    ("get", "/v1/policy", None),
    ("get", "/v1/policy/history", None),
    ("post", "/v1/policy/temporal", {"rules": ["fact=latest-wins"]}),
    ("post", "/v1/policy/trust", {"block": ["injection"]}),
    ("post", "/v1/sweep", {}),
    ("post", "/v1/subjects/user-7/detect", None),
    ("post", "/v1/jobs/run", {"max_jobs": 1}),
    ("post", "/v1/jobs/schedule", None),
    ("get", "/v1/jobs/settings", None),
    ("post", "/v1/jobs/settings", {"tail_threshold": 5}),
    ("get", "/v1/artifacts", None),
    ("get", "/v1/recall?subject=user-7", None),
    ("get", "/v1/release/configs", None),
]


@pytest.mark.parametrize(("method", "path", "body"), NEW_ENDPOINTS)
@pytest.mark.parametrize("key", [None, "mlk_nothere_abc"])
def test_every_new_endpoint_is_401_without_a_valid_key(
    service: Service, method: str, path: str, body: dict[str, Any] | None, key: str | None
) -> None:
    seed(service)
    with service.client(tenant=None, key=key) as http:
        response = http.request(method, path, json=body)
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"] == {
        "code": 2,
        "type": "Unauthorized",
        "message": "a valid API key is required: Authorization: Bearer KEY",
    }
    with Memory(service.db, tenant="acme") as memory:  # nothing ran
        assert memory.policy()["temporal"]["version"] == 1
        assert memory.tail_threshold == 100 and memory.jobs() == []


# (path, a body of the wrong shape or out of range, the field the error names)
BAD_BODIES = [
    ("/v1/extract", {"events": "not a list"}, "events"),
    ("/v1/verify", {"generator": "gpt-9"}, "generator"),
    ("/v1/policy/temporal", {"rules": []}, "rules"),
    ("/v1/policy/temporal", {"rules": ["fact=whatever"]}, "rule"),
    ("/v1/policy/trust", {"admit": ["root"]}, "admit"),
    ("/v1/policy/trust", {"block": ["x"], "block_any_taint": True}, "block"),
    ("/v1/policy/trust", {"batch": 0}, "batch"),
    ("/v1/sweep", {"older_than": -1}, "older_than"),
    ("/v1/jobs/run", {"max_jobs": 0}, "max_jobs"),
    ("/v1/jobs/run", {"max_jobs": 101}, "max_jobs"),
    ("/v1/jobs/settings", {"tail_threshold": -1}, "tail_threshold"),
    ("/v1/eval", {"gold": [{"value": "x"}]}, "event"),
]


@pytest.mark.parametrize(("path", "body", "field"), BAD_BODIES)
def test_bad_bodies_are_400_naming_the_field_and_change_nothing(
    service: Service, path: str, body: dict[str, Any], field: str
) -> None:
    seed(service)
    with service.client() as http:
        response = http.post(path, json=body)
        garbled = http.post(
            path, content=b"{not json", headers={"content-type": "application/json"}
        )
        policy = http.get("/v1/policy").json()
        settings = http.get("/v1/jobs/settings").json()
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == 2 and error["type"] == "BadInput"
    assert field in error["message"]
    assert garbled.status_code == 400 and garbled.json()["error"]["code"] == 2
    assert policy["temporal"]["version"] == policy["trust"]["version"] == 1
    assert settings == {"tail_threshold": 100}


def test_unknown_job_state_and_no_subject_are_400(service: Service) -> None:
    with service.client() as http:
        state = http.get("/v1/jobs", params={"state": "sleeping"})
        nothing = http.get("/v1/recall")
    assert state.status_code == 400 and "state" in state.json()["error"]["message"]
    assert nothing.status_code == 400 and "subject" in nothing.json()["error"]["message"]


INTERFACES = Path(__file__).resolve().parents[1] / "docs" / "interfaces.md"


def cli_commands() -> set[str]:
    """Every command of ``memlineage --help``, a group's subcommands as ``group sub``."""
    found = set()
    for name, command in root.commands.items():
        if not isinstance(command, click.Group) or command.invoke_without_command:
            found.add(name)
        if isinstance(command, click.Group):
            found |= {f"{name} {sub}" for sub in command.commands}
    return found


def routes(text: str) -> set[tuple[str, str]]:
    """``(METHOD, path)`` pairs named in ``text``, each placeholder written ``{}``."""
    return {
        (method, re.sub(r"\{[^}]*\}", "{}", path))
        for method, path in re.findall(r"`(GET|POST) (/[^`?\s]*)", text)
    }


def test_the_interfaces_table_names_every_command_and_every_route(tmp_path: Path) -> None:
    """docs/interfaces.md: one row per command, and each HTTP route in the row exists."""
    section = INTERFACES.read_text(encoding="utf-8").split("## Every command, every interface")[1]
    table = section.split("What stays on the command line")[0]
    rows = {}
    for line in table.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0].strip("`")] = cells[2]
    assert set(rows) == cli_commands()
    app = create_app(str(tmp_path / "spec.db"))
    spec = routes(
        " ".join(
            f"`{method.upper()} {path}`"
            for path, operations in app.openapi()["paths"].items()
            for method in operations
        )
    )
    named = set()
    for command, http in rows.items():
        assert routes(http) or http == "CLI only", command
        assert routes(http) <= spec, (command, routes(http) - spec)
        named |= routes(http)
    # every other route serves a command; these two serve no command (see the docs)
    assert spec - named == {("GET", "/health"), ("GET", "/v1/subjects")}
