"""Chat messages ``[{role, content, name}]`` appended as events, in Python, on the command
line and over HTTP: a speaker on each event, a trust level from the role, derived ids
that make a retry a no-op, and every check before the first write."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memlineage import BadInput, Memory
from memlineage.interfaces.cli import main
from memlineage.recall.prompt import render
from storedump import dump
from test_http import service_on

CHAT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Never book me a flight before 9 am.", "name": "Ada"},
    {"role": "assistant", "content": "Noted: no flights before 9 am."},
    {"role": "tool", "content": "calendar: 3 meetings on Friday"},
]


def test_each_message_is_an_event_with_its_speaker_and_trust(memory: Memory) -> None:
    appended = memory.add_messages("user-7", CHAT, thread="t-1")
    assert [a.created for a in appended] == [True, True, True]  # the system prompt is skipped
    events = memory.events("user-7")
    assert [(e.speaker, e.trust, e.text) for e in events] == [
        ("Ada", "user", "Never book me a flight before 9 am."),
        ("assistant", "agent", "Noted: no flights before 9 am."),
        ("tool", "tool", "calendar: 3 meetings on Friday"),
    ]
    assert all(e.id.startswith("msg-") for e in events)
    context = render(memory.recall("user-7"), "markdown")
    assert "Never book me a flight before 9 am." in context and "helpful assistant" not in context


def test_a_retry_and_a_resent_history_store_nothing_twice(memory: Memory) -> None:
    first = memory.add_messages("user-7", CHAT[:3], thread="t-1")
    again = memory.add_messages("user-7", CHAT[:3], thread="t-1")
    assert [a.id for a in again] == [a.id for a in first]
    assert not any(a.created for a in again)
    grown = memory.add_messages("user-7", CHAT, thread="t-1")  # the history, one turn longer
    assert [a.created for a in grown] == [False, False, True]
    other_thread = memory.add_messages("user-7", CHAT[1:2], thread="t-2")
    assert other_thread[0].created  # another conversation: another event
    assert len(memory.events("user-7")) == 4


def test_the_time_given_is_the_events_time_and_part_of_the_id(memory: Memory) -> None:
    at = memory.add_messages("user-7", CHAT[1:2], at="2026-03-04T09:00:00+01:00")
    own = [{**CHAT[1], "at": "2026-03-05T09:00:00Z"}]
    later = memory.add_messages("user-7", own, at="2026-03-04T09:00:00+01:00")
    assert at[0].id != later[0].id
    respelled = memory.add_messages("user-7", CHAT[1:2], at="2026-03-04t09:00:00.000+01:00")
    assert [(r.id, r.created) for r in respelled] == [(at[0].id, False)]  # one time, one id
    assert [e.at for e in memory.events("user-7")] == [
        "2026-03-04T09:00:00+01:00",
        "2026-03-05T09:00:00Z",
    ]


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ({"role": "robot", "content": "hi"}, "messages[1].role"),
        ({"role": "user"}, "messages[1].content"),
        ({"role": "user", "content": "   "}, "messages[1].content"),
        ({"role": "user", "content": "hi", "name": 7}, "messages[1].name"),
        ({"role": "user", "content": "hi", "mood": "happy"}, "messages[1].mood"),
        ({"role": "user", "content": "hi", "at": "yesterday"}, "messages[1].at"),
        ({"role": "user", "content": "a\x00b"}, "messages[1].content"),
        ("hello", "messages[1]."),
    ],
)
def test_a_bad_message_is_named_and_nothing_is_stored(
    memory: Memory, db_url: str, bad: Any, where: str
) -> None:
    before = dump(db_url)
    with pytest.raises(BadInput) as refused:
        memory.add_messages("user-7", [CHAT[1], bad, CHAT[2]])
    assert f"field '{where}" in str(refused.value)
    assert dump(db_url) == before


def test_command_line_takes_a_json_array_or_json_lines(db_url: str, tmp_path: Path) -> None:
    array = tmp_path / "chat.json"
    array.write_text(json.dumps(CHAT, indent=2))
    code, doc = cli(db_url, "add-messages", "user-7", str(array), "--thread", "t-1")
    assert code == 0 and (doc["appended"], doc["existing"], doc["skipped"]) == (3, 0, 1)
    lines = tmp_path / "chat.jsonl"
    lines.write_text("\n".join(json.dumps(m) for m in CHAT) + "\n")
    code, doc = cli(db_url, "add-messages", "user-7", str(lines), "--thread", "t-1")
    assert code == 0 and (doc["appended"], doc["existing"]) == (0, 3)  # the same messages
    lines.write_text(json.dumps(CHAT[1]) + "\n" + json.dumps({"role": "user"}) + "\n")
    before = dump(db_url)
    code = main(["add-messages", "user-7", str(lines), "--db", db_url, "--tenant", "acme"])
    assert code == 2 and dump(db_url) == before


def test_command_line_names_the_line_and_field(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = tmp_path / "chat.jsonl"
    lines.write_text(json.dumps(CHAT[1]) + "\n\n" + json.dumps({"role": "user"}) + "\n")
    code = main(["add-messages", "user-7", str(lines), "--db", db_url])
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "memlineage: line 3, field 'messages[1].content': must be a non-empty string"
    )


def test_http_route_appends_messages_and_refuses_bad_ones(db_url: str) -> None:
    with service_on(db_url) as service, service.client() as http:
        body = {"messages": CHAT, "thread": "t-1"}
        first = http.post("/v1/subjects/user-7/messages", json=body)
        assert first.status_code == 200, first.text
        assert (first.json()["appended"], first.json()["skipped"]) == (3, 1)
        retried = http.post("/v1/subjects/user-7/messages", json=body).json()
        assert (retried["appended"], retried["existing"]) == (0, 3)
        bad = {"messages": [CHAT[1], {"role": "user", "content": 5}]}
        refused = http.post("/v1/subjects/user-7/messages", json=bad)
        assert refused.status_code == 400
        assert "messages[1].content" in refused.json()["error"]["message"]
        events = http.get("/v1/subjects/user-7/recall").json()["events"]
        assert [e["speaker"] for e in events] == ["Ada", "assistant", "tool"]


def cli(db: str, *argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main([*argv, "--db", db, "--tenant", "acme", "--json"], stdout=out)
    return code, json.loads(out.getvalue()) if out.getvalue() else None
