"""Hostile strings, on both backends: one rule for every string field, the same answer everywhere.

A lone surrogate (not encodable as UTF-8) or NUL (not storable by PostgreSQL)
in any string a caller hands in is bad input naming the field: ``BadInput``
in the library, exit 2 on the command line, a 400 over HTTP, a tool error
over MCP; never a 500 or a traceback, and nothing stored changes.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from memlineage import Memory
from memlineage.errors import BadInput
from memlineage.interfaces.cli import main
from memlineage.operations.evaluate import GoldFact
from storedump import dump
from test_http import Service, service_on

SURROGATE = "bad \ud800 text"
NUL = "bad \x00 text"
HOSTILE = {"surrogate": SURROGATE, "nul": NUL}
EVENTS = [
    {"id": "m-1", "subject": "user-7", "text": "Never deploy on Fridays.", "kind": "constraint"},
    {"id": "m-2", "subject": "user-7", "text": "I love jazz."},
    {"id": "m-3", "subject": "user-7", "text": "Jazz gets on my nerves."},
]

# (name, the call with a hostile string s, the field the error names)
CALLS: list[tuple[str, Callable[[Memory, str], Any], str]] = [
    ("revoke reason", lambda m, s: m.revoke("m-1", reason=s), "reason"),
    ("revoke id", lambda m, s: m.revoke(s), "event_id"),
    ("taint", lambda m, s: m.trust("m-1", taint=[s]), "taint[0]"),
    ("trust level", lambda m, s: m.trust("m-1", level=s), "level"),
    ("conflict key", lambda m, s: m.conflict("m-2", "m-3", key=s), "key"),
    ("erase reason", lambda m, s: m.erase("m-1", s), "reason"),
    ("erase by", lambda m, s: m.erase("m-1", "asked", by=s), "by"),
    ("dismiss reason", lambda m, s: m.dismiss("conflict:user-7:000001", s), "reason"),
    ("temporal reason", lambda m, s: m.set_temporal_policy(["fact=keep"], s), "reason"),
    ("temporal rule", lambda m, s: m.set_temporal_policy([s]), "assignments[0]"),
    ("trust block", lambda m, s: m.set_trust_policy(block=[s]), "block[0]"),
    ("trust reason", lambda m, s: m.set_trust_policy(reason=s), "reason"),
    ("job subject", lambda m, s: m.queue([s]), "subjects[0]"),
    ("eval gold key", lambda m, s: m.eval(gold=[GoldFact("m-1", "x", key=s)]), "gold[0].key"),
    ("key label", lambda m, s: m.create_key(label=s), "label"),
    ("recall query", lambda m, s: m.recall("user-7", query=s), "query"),
    ("why", lambda m, s: m.why("user-7", s), "query"),
]


@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize(("name", "call", "field"), CALLS, ids=[c[0] for c in CALLS])
def test_every_string_argument_is_checked_the_same_on_both_backends(
    db_url: str, name: str, call: Callable[[Memory, str], Any], field: str, kind: str
) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add(EVENTS)
        before = dump(db_url)
        with pytest.raises(BadInput) as caught:
            call(memory, HOSTILE[kind])
    assert caught.value.field == field, name
    assert dump(db_url) == before


@pytest.mark.parametrize("kind", HOSTILE)
def test_a_hostile_tenant_is_bad_input(db_url: str, kind: str) -> None:
    with pytest.raises(BadInput) as caught:
        Memory(db_url, tenant=f"acme{HOSTILE[kind]}")
    assert caught.value.field == "tenant"


# (method, path, JSON body with a hostile string s, the field the error names)
REQUESTS: list[tuple[str, str, Callable[[str], dict[str, Any]], str]] = [
    ("post", "/v1/events/m-1/revoke", lambda s: {"reason": s}, "reason"),
    ("post", "/v1/events/m-1/trust", lambda s: {"taint": ["ok", s]}, "taint[1]"),
    ("post", "/v1/conflicts", lambda s: {"a": "m-2", "b": "m-3", "key": s}, "key"),
    ("post", "/v1/events/m-1/erase", lambda s: {"reason": "asked", "by": s}, "by"),
    ("post", "/v1/conflicts/conflict:user-7:000001/dismiss", lambda s: {"reason": s}, "reason"),
    ("post", "/v1/policy/temporal", lambda s: {"rules": ["fact=keep"], "reason": s}, "reason"),
    ("post", "/v1/policy/trust", lambda s: {"block": [s]}, "block[0]"),
    ("post", "/v1/jobs", lambda s: {"subjects": [s]}, "subjects[0]"),
    (
        "post",
        "/v1/eval",
        lambda s: {"gold": [{"event": "m-1", "value": "x", "key": s}]},
        "gold[0].key",
    ),
    ("post", "/v1/reviews/x/approve", lambda s: {"reviewer": s}, "reviewer"),
    ("post", "/v1/release", lambda s: {"mode": s}, "mode"),
]


@pytest.fixture
def seeded_service(db_url: str) -> Any:
    with service_on(db_url) as running:
        with running.client() as http:
            assert http.post("/v1/events", json={"events": EVENTS}).status_code == 200
        yield running


@pytest.mark.parametrize("kind", HOSTILE)
def test_every_string_of_every_body_is_a_400_naming_the_field(
    seeded_service: Service, kind: str
) -> None:
    with seeded_service.client() as http:
        for method, path, body, field in REQUESTS:
            before = dump(seeded_service.db)
            # json.dumps escapes the surrogate as \ud800, as a hostile client would send it
            content = json.dumps(body(HOSTILE[kind])).encode()
            answer = http.request(
                method, path, content=content, headers={"content-type": "application/json"}
            )
            assert answer.status_code == 400, (path, answer.text)
            error = answer.json()["error"]
            assert error["type"] == "BadInput" and f"field {field!r}" in error["message"], path
            assert dump(seeded_service.db) == before, path


@pytest.mark.parametrize("kind", HOSTILE)
def test_hostile_query_and_path_strings_are_a_400(seeded_service: Service, kind: str) -> None:
    # Percent-encoded: a URL cannot carry a lone surrogate itself (its UTF-8 form decodes to
    # U+FFFD), but it can carry NUL.
    quoted = "%00" if kind == "nul" else "%ED%A0%80"
    with seeded_service.client() as http:
        recall = http.get(f"/v1/subjects/user-7/recall?query=a{quoted}")
        revoked = http.post(f"/v1/events/m{quoted}/revoke", json={})
    if kind == "nul":
        assert recall.status_code == 400 and "'query'" in recall.json()["error"]["message"]
        assert revoked.status_code == 400 and "'event_id'" in revoked.json()["error"]["message"]
    else:
        assert recall.status_code == 200 and revoked.status_code == 404, revoked.text


def cli(db: str, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main([*argv, "--db", db, "--tenant", "acme"], stdout=io.StringIO())
    return code, capsys.readouterr().err


# A non-UTF-8 byte on the command line arrives as a lone surrogate (surrogateescape).
ARGV = [
    (["revoke", "m-1", "--reason", SURROGATE], "reason"),
    (["conflict", "m-2", "m-3", "--key", NUL], "key"),
    (["erase", "m-1", "--reason", "asked", "--by", SURROGATE], "by"),
    (["trust", "m-1", "--taint", NUL], "taint[0]"),
    (["policy", "trust", "--block", SURROGATE], "block[0]"),
    (["jobs", "add", NUL], "subjects[0]"),
]


@pytest.mark.parametrize(("argv", "field"), ARGV, ids=[a[0][0] for a in ARGV])
def test_the_command_line_refuses_them_with_exit_2_naming_the_field(
    db_url: str, capsys: pytest.CaptureFixture[str], argv: list[str], field: str
) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add(EVENTS)
    before = dump(db_url)
    code, err = cli(db_url, capsys, *argv)
    assert code == 2, err
    assert f"field {field!r}" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert dump(db_url) == before


def test_gold_file_keys_are_checked(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add(EVENTS)
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"event": "m-1", "value": "x", "key": NUL}) + "\n", encoding="utf-8")
    before = dump(db_url)
    code, err = cli(db_url, capsys, "eval", "--gold", str(gold))
    assert code == 2 and "line 1, field 'key'" in err, err
    assert dump(db_url) == before


ESCAPES = "\x1b]0;PWNED\x07\x1b[2J"


@pytest.mark.parametrize("command", ["recall", "audit"])
def test_plain_text_output_shows_control_characters_escaped(
    db_url: str, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add([{"id": "m-1", "subject": "user-7", "text": f"I love jazz.{ESCAPES}"}])
        memory.revoke("m-1", reason=f"withdrawn{ESCAPES}")
        memory.add([{"id": "m-2", "subject": "user-7", "text": f"Call me Al.{ESCAPES}"}])
    out = io.StringIO()
    assert main([command, "user-7", "--db", db_url, "--tenant", "acme"], stdout=out) == 0
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text, text
    if command == "recall":
        assert "Call me Al.\\x1b]0;PWNED\\x07\\x1b[2J" in text
    else:
        assert "withdrawn\\x1b]0;PWNED\\x07\\x1b[2J" in text


def test_review_session_dies_with_its_key(db_url: str) -> None:
    with service_on(db_url) as running:
        with Memory(db_url, tenant="acme") as memory:
            key_id, key = memory.create_key(label="reviewer")
        with running.client(tenant=None) as http:
            signed = http.post("/review/login", data={"key": key, "reviewer": "eve"})
            assert signed.status_code == 303
            assert http.get("/review").status_code == 200
            with Memory(db_url, tenant="acme") as memory:
                assert memory.revoke_key(key_id)
            listed = http.get("/review")
            assert listed.status_code == 303 and listed.headers["location"] == "/review/login"
            shown = http.get("/review/summary:user-7:000001-x/show")
            assert shown.status_code == 303
            decided = http.post(
                "/review/summary:user-7:000001-x/decide",
                data={"action": "approve", "csrf": "x", "reason": ""},
            )
            assert decided.status_code == 303


def keyword_dsn(pg_url: str, password: str) -> str:
    """The test schema's URL as a libpq keyword DSN (trust auth ignores the password)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(pg_url)
    return make_conninfo("", **{**params, "password": password})


def test_a_keyword_dsn_opens_postgresql_and_never_shows_its_password(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    dsn = keyword_dsn(pg_url, "hunter2secret")
    assert dsn.startswith("host=") or " dbname=" in dsn
    with Memory(dsn, tenant="acme") as memory:
        memory.add(EVENTS[:1])
        assert "hunter2secret" not in repr(memory.store)
    with Memory(pg_url, tenant="acme") as memory:
        assert [e.id for e in memory.events("user-7")] == ["m-1"]
    assert list(tmp_path.iterdir()) == []  # no SQLite file named after the DSN
    broken = dsn.replace("port=5432", "port=1")
    code, err = cli(broken, capsys, "recall", "user-7")
    assert code == 2 and "PostgreSQL" in err and "hunter2secret" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_an_unparsable_keyword_dsn_is_refused_without_echoing_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = cli("host=db password=hunter2secret 'unclosed", capsys, "recall", "user-7")
    assert code == 2 and "hunter2secret" not in err and "keyword DSN" in err, err
    assert list(tmp_path.iterdir()) == []


SECRET_URLS = [
    "https://alice:hunter2secret@llm.example/v1",
    "https://llm.example/v1?api_key=hunter2secret",
    "https://llm.example/v1?x=1&token=hunter2secret",
]


@pytest.mark.parametrize("url", SECRET_URLS)
def test_a_generator_url_with_credentials_is_refused_and_never_stored(
    db_url: str, capsys: pytest.CaptureFixture[str], url: str
) -> None:
    with Memory(db_url, tenant="acme") as memory:
        memory.add(EVENTS[:1])
    before = dump(db_url)
    code, err = cli(
        db_url,
        capsys,
        "release",
        "rollout",
        "--generator",
        "openai",
        "--model",
        "m",
        "--base-url",
        url,
    )
    assert code == 2 and "field 'base_url'" in err and "hunter2secret" not in err, err
    assert dump(db_url) == before
    with Memory(db_url, tenant="acme") as memory, pytest.raises(BadInput) as caught:
        memory.rollout({"generator": "openai", "model": "m", "api_key": "hunter2secret"})
    assert caught.value.field == "api_key"


def test_credentials_stored_before_are_never_returned(db_url: str) -> None:
    """A configuration written by an older version (straight into the store) shows ***."""
    with Memory(db_url, tenant="acme") as memory:
        for url in SECRET_URLS:
            config = {"generator": "openai", "model": "m", "base_url": url}
            memory.store.add_generator_config("acme", config)
    with service_on(db_url) as running, running.client() as http:
        listed = http.get("/v1/release/configs")
    assert listed.status_code == 200 and "hunter2secret" not in listed.text, listed.text
    assert "llm.example" in listed.text
    out = io.StringIO()
    assert main(["release", "configs", "--db", db_url, "--tenant", "acme"], stdout=out) == 0
    assert "hunter2secret" not in out.getvalue() and "llm.example" in out.getvalue()


def test_a_chunked_body_over_the_limit_is_413_in_the_error_shape(db_url: str) -> None:
    def chunks() -> Any:
        yield b'{"events": ['
        for _ in range(100):  # 100 KiB, over the test service's 64 KiB
            yield b'"' + b"x" * 1024 + b'",'
        yield b'"x"]}'

    with service_on(db_url) as running, running.client() as http:
        answer = http.post(
            "/v1/events", content=chunks(), headers={"content-type": "application/json"}
        )
    assert answer.status_code == 413, answer.text
    assert answer.json()["error"]["type"] == "BodyTooLarge"


def test_a_key_twice_in_a_body_is_refused_over_http_as_on_the_command_line(
    db_url: str,
) -> None:
    twice = b'{"reason": "first", "reason": "second"}'
    with service_on(db_url) as running, running.client() as http:
        assert http.post("/v1/events", json={"events": EVENTS}).status_code == 200
        before = dump(db_url)
        answer = http.post(
            "/v1/events/m-1/revoke", content=twice, headers={"content-type": "application/json"}
        )
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["type"] == "BadInput" and "'reason'" in error["message"]
        assert "twice" in error["message"]
        assert dump(db_url) == before
        nested = b'{"events": [{"id": "m-9", "subject": "s", "text": "a", "text": "b"}]}'
        answer = http.post(
            "/v1/events", content=nested, headers={"content-type": "application/json"}
        )
        assert answer.status_code == 400 and "'text'" in answer.json()["error"]["message"]


def test_review_links_are_url_encoded(db_url: str) -> None:
    subject = "plan?v=1#top"
    with Memory(db_url, tenant="acme") as memory:
        memory.add([{"id": "p-1", "subject": subject, "text": "Never deploy on Fridays."}])
        memory.release_mode("shadow")
        assert memory.consolidate(subject).awaiting_review
    with service_on(db_url) as running, running.client() as http:
        http.post("/review/login", data={"key": running.keys["acme"], "reviewer": "eve"})
        page = http.get("/review").text
        [link] = re.findall(r'href="(/review/[^"]+/show)"', page)
        shown = http.get(link)
        assert shown.status_code == 200 and "Never deploy on Fridays" in shown.text
        [action] = re.findall(r'action="(/review/[^"]+/decide)"', shown.text)
        [csrf] = re.findall(r'name="csrf" value="([^"]+)"', shown.text)
        decided = http.post(action, data={"action": "approve", "csrf": csrf, "reason": "ok"})
        assert decided.status_code == 200, decided.text
    with Memory(db_url, tenant="acme") as memory:
        assert [r["state"] for r in memory.reviews(None)] == ["approved"]


def test_an_add_refused_by_a_check_that_needs_the_store_creates_no_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "new.db"
    events = tmp_path / "events.jsonl"
    line = {"id": "a", "subject": "s", "text": "x", "supersedes": "missing"}
    events.write_text(json.dumps(line) + "\n", encoding="utf-8")
    code, err = cli(str(db), capsys, "add", str(events))
    assert code == 2 and "supersedes" in err
    assert list(tmp_path.iterdir()) == [events]


def test_mcp_tools_refuse_them_as_a_tool_error_naming_the_field(db_url: str) -> None:
    from test_mcp import server_params

    async def hostile_calls() -> list[Any]:
        async with (
            stdio_client(server_params(db_url)) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            remembered = await session.call_tool(
                "remember", {"subject": "user-7", "text": "Never deploy on Fridays.", "id": "m-1"}
            )
            assert not remembered.is_error
            return [
                await session.call_tool("revoke", {"event_id": "m-1", "reason": NUL}),
                await session.call_tool("recall", {"subject": "user-7", "query": f"a{NUL}"}),
                await session.call_tool("remember", {"subject": "user-7", "text": NUL}),
            ]

    results = anyio.run(hostile_calls)
    assert all(r.is_error for r in results)
    texts = [r.content[0].text for r in results]
    assert "'reason'" in texts[0] and "'query'" in texts[1] and "text'" in texts[2], texts
    with Memory(db_url, tenant="acme") as memory:
        assert [e.id for e in memory.events("user-7", valid_only=True)] == ["m-1"]
