"""The command line on both backends: the contract of DESIGN.md for the commands that exist."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from memlineage import Memory
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.interfaces.cli import main
from storedump import dump


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
    {"id": "m-3", "subject": "user-7", "text": "Jazz gets on my nerves."},
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
    err = capsys.readouterr().err
    assert "line 3" in err and "'text'" in err and err.count("\n") == 1
    assert code == 2 and doc["error"]["message"] == err[len("memlineage: ") : -1]
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
    assert code == 2 and doc["error"]["message"] == err[len("memlineage: ") : -1]
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
    from memlineage.interfaces.cli import root

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


# -- consolidate of several subjects --

SUBJECTS = [
    {"id": "s-1", "subject": "user-1", "text": "Never deploy on Fridays.", "kind": "constraint"},
    {"id": "s-2", "subject": "user-2", "text": "The budget is 40 EUR."},
    {"id": "s-3", "subject": "user-3", "text": "I prefer tea."},
]
ONE_SUBJECT_KEYS = {
    "artifact_id",
    "status",
    "switched",
    "reason",
    "covers_through",
    "over_budget",
    "gate",
    "fallback",
    "attempts",
}
SUMMARY_LINE = r"summary:{subject}:\d{{6}}-[0-9a-f]{{8}}: published, switched=True"


def as_text(db: str, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main([*argv, "--db", db, "--tenant", "acme"], stdout=out)
    return code, out.getvalue()


class FailsFor(DeterministicGenerator):
    """The built-in generator, except that the output for ``subject`` lacks its claims."""

    def __init__(self, subject: str) -> None:
        super().__init__()
        self.subject = subject

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        output = super().generate(request)
        if request.subject == self.subject:
            del output["claims"]
        return output


def test_one_subject_prints_what_it_always_did(db_url: str, tmp_path: Path) -> None:
    run(db_url, "add", write_jsonl(tmp_path / "e.jsonl", SUBJECTS))
    code, text = as_text(db_url, "consolidate", "user-1")
    assert code == 0 and re.fullmatch(SUMMARY_LINE.format(subject="user-1") + "\n", text)
    code, doc = run(db_url, "consolidate", "user-2")
    assert code == 0 and set(doc) == ONE_SUBJECT_KEYS


def test_several_subjects_print_one_document_with_each_and_the_counts(
    db_url: str, tmp_path: Path
) -> None:
    run(db_url, "add", write_jsonl(tmp_path / "e.jsonl", SUBJECTS))
    code, doc = run(db_url, "consolidate", "user-2", "user-1", "user-2")
    assert code == 0 and set(doc) == {"subjects", "switched", "failed"}
    assert [d["subject"] for d in doc["subjects"]] == ["user-2", "user-1"]  # given order, once
    assert all(set(d) == {"subject", *ONE_SUBJECT_KEYS} for d in doc["subjects"])
    assert (doc["switched"], doc["failed"]) == (2, 0)
    code, text = as_text(db_url, "consolidate", "user-3", "user-1")
    lines = text.splitlines()
    assert code == 0 and len(lines) == 3, text
    assert re.fullmatch(SUMMARY_LINE.format(subject="user-3"), lines[0])
    assert lines[1].startswith("summary:user-1:") and "up to date" in lines[1]
    assert lines[2] == "2 subject(s): 1 switched, 0 gate(s) failed"


def test_all_consolidates_every_subject_and_refuses_explicit_ones_too(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(db_url, "add", write_jsonl(tmp_path / "e.jsonl", SUBJECTS))
    before = dump(db_url)
    for argv in (["--all", "user-1"], ["user-1", "--all"], []):
        capsys.readouterr()
        code, doc = run(db_url, "consolidate", *argv)
        err = capsys.readouterr().err
        assert err.startswith("memlineage: ") and err.count("\n") == 1, err
        assert (code, doc["error"]["type"]) == (2, "UsageError")
        assert doc["error"]["message"] == err[len("memlineage: ") : -1]
        assert "--all" in err
    assert dump(db_url) == before
    code, doc = run(db_url, "consolidate", "--all")
    assert code == 0 and [d["subject"] for d in doc["subjects"]] == ["user-1", "user-2", "user-3"]
    assert doc["switched"] == 3
    code, doc = run(db_url, "consolidate", "--all", "--force")
    assert code == 0 and doc["switched"] == 3  # a rebuild of every subject


def test_all_in_an_empty_tenant_has_nothing_to_do(db_url: str, tmp_path: Path) -> None:
    run(db_url, "add", write_jsonl(tmp_path / "e.jsonl", SUBJECTS))
    out = io.StringIO()
    code = main(["consolidate", "--all", "--db", db_url, "--tenant", "other", "--json"], out)
    assert code == 0 and json.loads(out.getvalue()) == {"subjects": [], "switched": 0, "failed": 0}


def test_a_failing_gate_among_several_exits_1_and_the_others_are_consolidated(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(db_url, "add", write_jsonl(tmp_path / "e.jsonl", SUBJECTS))
    monkeypatch.setattr(Memory, "generator", lambda *_a, **_k: FailsFor("user-2"))
    code, doc = run(db_url, "consolidate", "user-1", "user-2", "user-3")
    assert code == 1 and (doc["switched"], doc["failed"]) == (2, 1)
    failed = doc["subjects"][1]
    assert failed["subject"] == "user-2" and failed["gate"]["passed"] is False
    assert failed["status"] == "rejected" and failed["switched"] is False
    modes = {s: run(db_url, "recall", s)[1]["mode"] for s in ("user-1", "user-2", "user-3")}
    assert modes == {"user-1": "summary", "user-2": "raw", "user-3": "summary"}
    code, text = as_text(db_url, "consolidate", "user-2", "user-1")
    assert code == 1 and text.splitlines()[-1] == "2 subject(s): 0 switched, 1 gate(s) failed"


def test_an_unknown_subject_exits_2_and_nothing_is_consolidated(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(db_url, "add", write_jsonl(tmp_path / "e.jsonl", SUBJECTS))
    before = dump(db_url)
    capsys.readouterr()
    message = "field 'subject': no events for subject 'nobody'"
    error = {"error": {"code": 2, "type": "NotFound", "message": message}}
    assert run(db_url, "consolidate", "user-1", "nobody", "user-3") == (2, error)
    err = capsys.readouterr().err
    assert err == f"memlineage: {message}\n"
    assert dump(db_url) == before
    assert run(db_url, "consolidate", "user-1", "user-2", "--budget", "0")[0] == 2
    assert dump(db_url) == before


@pytest.mark.parametrize("position", ["before", "after"])
def test_several_subjects_with_global_options_before_or_after(
    db_url: str, tmp_path: Path, position: str
) -> None:
    run(db_url, "add", write_jsonl(tmp_path / "e.jsonl", SUBJECTS))
    options = ["--db", db_url, "--tenant", "acme", "--json"]
    command = ["consolidate", "user-1", "user-3"]
    out = io.StringIO()
    argv = [*options, *command] if position == "before" else [*command, *options]
    assert main(argv, stdout=out) == 0
    doc = json.loads(out.getvalue())
    assert [d["subject"] for d in doc["subjects"]] == ["user-1", "user-3"]
    assert doc["switched"] == 2


def test_release_fail_takes_the_tenant_as_its_argument(db_url: str, tmp_path: Path) -> None:
    run(db_url, "add", write_jsonl(tmp_path / "e.jsonl", SUBJECTS))
    out = io.StringIO()
    assert main(["release", "fail", "acme", "--db", db_url, "--json"], stdout=out) == 0
    doc = json.loads(out.getvalue())
    assert doc["tenant"] == "acme" and len(doc["subjects"]) == 3
