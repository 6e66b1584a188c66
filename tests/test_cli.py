"""The command line on both backends: the contract of DESIGN.md for the commands that exist."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from memlineage.cli import main


def run(db: str, *argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main([*argv, "--db", db, "--tenant", "acme", "--json"], stdout=out)
    text = out.getvalue()
    return code, json.loads(text) if text else None


def write_jsonl(path: Path, rows: list[Any]) -> str:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return str(path)


EVENTS = [
    {"id": "m-1", "subject": "user-7", "text": "Never deploy on Fridays.", "kind": "constraint"},
    {"id": "m-2", "subject": "user-7", "text": "I love jazz."},
    {"id": "m-3", "subject": "user-7", "text": "I hate jazz."},
]


def test_add_recall_and_artifacts(db_url: str, tmp_path: Path) -> None:
    code, doc = run(db_url, "add", write_jsonl(tmp_path / "e.jsonl", EVENTS))
    assert code == 0 and doc["appended"] == 3
    code, doc = run(db_url, "add", str(tmp_path / "e.jsonl"))
    assert code == 0 and doc == {**doc, "appended": 0, "existing": 3}
    code, doc = run(db_url, "recall", "user-7")
    assert code == 0 and doc["mode"] == "raw"
    assert [e["id"] for e in doc["events"]] == ["m-1", "m-2", "m-3"]
    assert set(doc) >= {
        "mode",
        "artifact_id",
        "claims",
        "open_items",
        "conflicts",
        "summary",
        "tail",
        "events",
    }
    code, doc = run(db_url, "consolidate", "user-7")
    assert code == 0 and doc["switched"] is True and doc["gate"]["passed"] is True
    code, doc = run(db_url, "recall", "user-7")
    assert doc["mode"] == "summary" and doc["artifact_id"]
    code, doc = run(db_url, "artifacts")
    assert code == 0 and [a["status"] for a in doc] == ["published"]


def test_conflict_resolve_trust_and_revoke(db_url: str, tmp_path: Path) -> None:
    run(db_url, "add", write_jsonl(tmp_path / "e.jsonl", EVENTS))
    code, doc = run(db_url, "conflict", "m-2", "m-3", "--key", "preference:jazz")
    assert code == 0 and doc["epoch"] == 1
    conflict = doc["conflict_id"]
    code, doc = run(db_url, "recall", "user-7")
    assert [c["id"] for c in doc["conflicts"]] == [conflict]
    code, doc = run(db_url, "resolve", conflict, "--winner", "m-3")
    assert code == 0 and doc["epoch"] == 2
    code, doc = run(db_url, "trust", "m-1", "--level", "agent", "--taint", "unverified")
    assert code == 0 and doc["epoch"] == 3
    code, doc = run(db_url, "revoke", "m-3")
    assert code == 0 and doc["epoch"] == 4
    code, doc = run(db_url, "recall", "user-7")
    assert doc["events"] == [] and doc["conflicts"] == []


def test_malformed_jsonl_names_line_and_field_and_applies_nothing(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows: list[Any] = [EVENTS[0], EVENTS[1], {"id": "m-9", "subject": "user-7", "text": 42}]
    code, doc = run(db_url, "add", write_jsonl(tmp_path / "bad.jsonl", rows))
    assert code == 2 and doc is None
    err = capsys.readouterr().err
    assert "line 3" in err and "'text'" in err and err.count("\n") == 1
    code, doc = run(db_url, "add", write_jsonl(tmp_path / "broken.jsonl", [EVENTS[0], "{oops"]))
    assert code == 2 and "line 2" in capsys.readouterr().err
    code, doc = run(db_url, "recall", "user-7")  # nothing applied: not even a database
    assert code == 2 and "no memlineage database" in capsys.readouterr().err


def test_unknown_ids_and_usage_errors_exit_2(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = run(db_url, "revoke", "missing")
    assert code == 2 and "missing" in capsys.readouterr().err
    assert main(["trust", "m-1", "--level", "god", "--db", db_url]) == 2
    err = capsys.readouterr().err
    assert "--level" in err and err.count("\n") == 1


def test_duplicate_id_with_other_content_exits_2(db_url: str, tmp_path: Path) -> None:
    run(db_url, "add", write_jsonl(tmp_path / "e.jsonl", EVENTS))
    changed = [{**EVENTS[0], "text": "Always deploy on Fridays."}]
    code, _ = run(db_url, "add", write_jsonl(tmp_path / "c.jsonl", changed))
    assert code == 2
    code, doc = run(db_url, "recall", "user-7")
    assert doc["events"][0]["text"] == "Never deploy on Fridays."


def test_extract_prints_items(tmp_path: Path) -> None:
    out = io.StringIO()
    path = write_jsonl(
        tmp_path / "e.jsonl",
        [{"id": "m-1", "subject": "u", "text": "Budget is at most 4,500 EUR for ORION-12."}],
    )
    assert main(["extract", path, "--json"], stdout=out) == 0
    items = json.loads(out.getvalue())["items"]
    assert items and all(
        set(i) >= {"source", "kind", "key", "value", "unit", "polarity"} for i in items
    )
    assert {i["source"] for i in items} == {"m-1"}


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"id": "m-9", "subject": "user-7", "text": "lone \\ud800 surrogate"}', None),
        (
            '{"id": "m-9", "subject": "user-7", "text": "x", "facts": [{"key": "k", "value": NaN}]}',  # noqa: E501
            None,
        ),
        ('{"id": "m-9", "subject": "user-7", "text": "x", "at": "tomorrow"}', "'at'"),
        ('{"id": "m-9", "subject": "user-7", "text": "x", "colour": "red"}', "'colour'"),
        ('["not", "an", "object"]', None),
    ],
    ids=["lone-surrogate", "nan", "bad-time", "unknown-field", "not-an-object"],
)
def test_values_json_or_the_contract_cannot_carry_exit_2_with_the_line(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, field: str | None
) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [EVENTS[0], line])
    code, doc = run(db_url, "add", path)
    err = capsys.readouterr().err
    assert code == 2 and doc is None
    assert "line 2" in err and err.count("\n") == 1
    if field:
        assert field in err
    code, doc = run(db_url, "recall", "user-7")  # nothing applied: not even a database
    assert code == 2 and "no memlineage database" in capsys.readouterr().err


@pytest.mark.parametrize("position", ["before", "after"])
def test_global_options_before_or_after_the_subcommand(
    db_url: str, tmp_path: Path, position: str
) -> None:
    path = write_jsonl(tmp_path / "e.jsonl", EVENTS)
    options = ["--db", db_url, "--tenant", "acme", "--json"]
    out = io.StringIO()
    argv = [*options, "add", path] if position == "before" else ["add", path, *options]
    assert main(argv, stdout=out) == 0
    assert json.loads(out.getvalue())["appended"] == 3
    out = io.StringIO()
    argv = (
        [*options, "recall", "user-7"] if position == "before" else ["recall", "user-7", *options]
    )
    assert main(argv, stdout=out) == 0
    assert [e["id"] for e in json.loads(out.getvalue())["events"]] == ["m-1", "m-2", "m-3"]


def test_every_command_has_help_with_an_example() -> None:
    from memlineage.cli import root

    for name, cmd in root.commands.items():
        assert main([name, "--help"]) == 0, name
        assert (cmd.epilog or "").startswith("Example: memlineage "), name


def test_consolidate_budget_and_recall_statements(db_url: str, tmp_path: Path) -> None:
    rows = [
        {"id": "b-1", "subject": "user-7", "text": "We chatted about the match last night."},
        {"id": "b-2", "subject": "user-7", "text": "Never deploy on Fridays."},
    ]
    run(db_url, "add", write_jsonl(tmp_path / "b.jsonl", rows))
    code, doc = run(db_url, "consolidate", "user-7", "--budget", "20")
    assert code == 0 and doc["switched"] is True and doc["over_budget"] is False
    code, doc = run(db_url, "recall", "user-7")
    assert code == 0 and doc["cold"] == ["b-1"]
    lines = doc["summary"].splitlines()
    assert lines[0] == "Constraints:" and lines[2:] == ["- Never deploy on Fridays."]
    [statement] = doc["statements"]
    assert statement["text"] == "Never deploy on Fridays."
    assert statement["derivedFrom"] == ["b-2"]
    code, doc = run(db_url, "consolidate", "user-7", "--budget", "0")
    assert code == 2
