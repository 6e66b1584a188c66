"""Bad input on the command line, on both backends: exit 2, one line naming the line, no change.

Every refused file is checked against a dump of every table taken before
it: refused input changes nothing, not even by creating a database.
Interrupts, closed and non-UTF-8 stdin run the real command in a process.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

import memlineage
from memlineage import Memory
from memlineage.errors import BadInput, NotFound
from memlineage.interfaces.cli import main
from memlineage.store.protocol import Appended
from storedump import dump

SEED = {"id": "s-1", "subject": "user-7", "text": "Never deploy on Fridays."}
GOOD = {"id": "m-1", "subject": "user-8", "text": "I prefer tea."}
SRC = str(Path(memlineage.__file__).resolve().parents[1])
CLI = "import sys; from memlineage.interfaces.cli import main; sys.exit(main())"


def run(db: str, *argv: str, tenant: str = "acme") -> tuple[int, Any]:
    out = io.StringIO()
    code = main([*argv, "--db", db, "--tenant", tenant, "--json"], stdout=out)
    text = out.getvalue()
    return code, json.loads(text) if text else None


def write(path: Path, lines: list[Any]) -> str:
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in lines) + "\n"
    path.write_text(text, encoding="utf-8")
    return str(path)


def seeded(db_url: str, tmp_path: Path) -> str:
    assert run(db_url, "add", write(tmp_path / "seed.jsonl", [SEED]))[0] == 0
    return db_url


def refused(
    db_url: str, path: str, capsys: pytest.CaptureFixture[str], line: int, field: str | None
) -> str:
    """Adds ``path``; asserts exit 2, one line naming ``line`` and ``field``, and no change."""
    capsys.readouterr()
    before = dump(db_url)
    code, doc = run(db_url, "add", path)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("memlineage: ") and err.count("\n") == 1, err
    # --json: the same message as one error document on stdout
    assert doc["error"]["code"] == 2 and doc["error"]["message"] == err[len("memlineage: ") : -1]
    assert f"line {line}" in err, err
    if field is not None:
        assert f"field {field!r}" in err, err
    assert dump(db_url) == before
    return err


def good_then(bad: Any) -> list[Any]:
    """A good event of another subject first: a refusal must not keep it either."""
    return [GOOD, "", bad]  # the bad event is on line 3


# -- defect 2: NUL --


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"id": "m\u00002"}, "id"),
        ({"subject": "user\u00009"}, "subject"),
        ({"text": "Never \u0000 deploy"}, "text"),
        ({"project": "orion\u0000"}, "project"),
        ({"supersedes": "s\u00001"}, "supersedes"),
        ({"taint": ["web\u0000"]}, "taint"),
        ({"facts": [{"key": "budget", "value": "4\u00005"}]}, "facts[0].value"),
    ],
)
def test_nul_exits_2_naming_the_field_on_both_backends(
    db_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: dict[str, Any],
    field: str,
) -> None:
    seeded(db_url, tmp_path)
    bad = {"id": "m-2", "subject": "user-9", "text": "x", **extra}
    path = write(tmp_path / "nul.jsonl", good_then(bad))
    err = refused(db_url, path, capsys, 3, field)
    assert "NUL" in err


# -- defects 4, 5 and 10: values add must refuse --

DEEP = "[" * 10_000 + "]" * 10_000
BAD_LINES = {
    "nested-10000-deep": DEEP,
    "nested-in-a-field": '{"id": "m-2", "subject": "u", "text": "x", "facts": ' + DEEP + "}",
    "year-1-with-offset": {**GOOD, "id": "m-2", "at": "0001-01-01T00:30:00+01:00"},
    "year-9999-with-offset": {**GOOD, "id": "m-2", "at": "9999-12-31T23:30:00-01:00"},
    "iso-week-date": {**GOOD, "id": "m-2", "at": "2026-W10-3T10:00:00Z"},
    "basic-format": {**GOOD, "id": "m-2", "at": "20260304T230000Z"},
    "date-only": {**GOOD, "id": "m-2", "at": "2026-03-04"},
    "leap-second": {**GOOD, "id": "m-2", "at": "2016-12-31T23:59:60Z"},
    "duplicate-key": '{"id": "m-2", "subject": "u", "text": "x", "id": "m-3"}',
    "facts-false": {**GOOD, "id": "m-2", "facts": False},
    "facts-zero": {**GOOD, "id": "m-2", "facts": 0},
    "facts-empty-string": {**GOOD, "id": "m-2", "facts": ""},
    "fact-kind-empty": {**GOOD, "id": "m-2", "facts": [{"key": "k", "value": 1, "kind": ""}]},
    "fact-kind-blank": {**GOOD, "id": "m-2", "facts": [{"key": "k", "value": 1, "kind": " "}]},
    "fact-key-blank": {**GOOD, "id": "m-2", "facts": [{"key": " ", "value": 1}]},
    "blank-project": {**GOOD, "id": "m-2", "project": " "},
}
FIELDS = {
    "year-1-with-offset": "at",
    "year-9999-with-offset": "at",
    "iso-week-date": "at",
    "basic-format": "at",
    "date-only": "at",
    "leap-second": "at",
    "duplicate-key": "id",
    "facts-false": "facts",
    "facts-zero": "facts",
    "facts-empty-string": "facts",
    "fact-kind-empty": "facts[0].kind",
    "fact-kind-blank": "facts[0].kind",
    "fact-key-blank": "facts[0].key",
    "blank-project": "project",
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_bad_lines_exit_2_with_their_line_and_change_nothing(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    seeded(db_url, tmp_path)
    path = write(tmp_path / "bad.jsonl", good_then(BAD_LINES[case]))
    refused(db_url, path, capsys, 3, FIELDS.get(case))


def test_a_refused_first_add_creates_no_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "fresh.db")
    path = write(tmp_path / "bad.jsonl", good_then({**GOOD, "facts": False}))
    refused(db, path, capsys, 3, "facts")
    assert not Path(db).exists()


def test_a_fact_kind_the_parser_refuses_never_blocks_consolidation(
    db_url: str, tmp_path: Path
) -> None:
    # Before: "kind": "" was stored, and every consolidation of user-8 was rejected forever.
    bad = {**GOOD, "facts": [{"key": "budget", "value": 4500, "unit": "EUR", "kind": ""}]}
    assert run(db_url, "add", write(tmp_path / "bad.jsonl", [bad]))[0] == 2
    fixed = {**GOOD, "facts": [{"key": "budget", "value": 4500, "unit": "EUR", "kind": "money"}]}
    assert run(db_url, "add", write(tmp_path / "ok.jsonl", [fixed]))[0] == 0
    code, doc = run(db_url, "consolidate", "user-8")
    assert code == 0 and doc["switched"] is True


# -- defect 10: lines, tenants, the stored offset --

SEPARATORS = ["line\u2028separator", "paragraph\u2029separator", "next\u0085line"]


def test_unicode_line_separators_and_crlf_keep_lines_whole_on_both_backends(
    db_url: str, tmp_path: Path
) -> None:
    rows = [
        json.dumps({"id": f"u-{i}", "subject": "user-7", "text": t}, ensure_ascii=False)
        for i, t in enumerate(SEPARATORS)
    ]
    path = tmp_path / "seps.jsonl"
    path.write_bytes("\r\n".join(rows).encode("utf-8") + b"\r\n")
    code, doc = run(db_url, "add", str(path))
    assert code == 0 and doc["appended"] == 3
    code, doc = run(db_url, "recall", "user-7")
    assert [e["text"] for e in doc["events"]] == SEPARATORS


def test_at_is_stored_with_its_own_offset_on_both_backends(db_url: str, tmp_path: Path) -> None:
    row = {**SEED, "text": "The review is tomorrow.", "at": "2026-03-04t23:00:00-07:00"}
    assert run(db_url, "add", write(tmp_path / "e.jsonl", [row]))[0] == 0
    code, doc = run(db_url, "recall", "user-7")
    assert doc["events"][0]["at"] == "2026-03-04T23:00:00-07:00"
    code, doc = run(db_url, "consolidate", "user-7")
    assert code == 0 and doc["switched"] is True
    recalled = run(db_url, "recall", "user-7")[1]
    assert [c["value"] for c in recalled["claims"] if c["kind"] == "date"] == ["2026-03-05"]
    # The reader sees the day it was written on, where "tomorrow" is the 5th (UTC says the 5th).
    assert "2026-03-04:" in recalled["summary"] and "2026-03-05:" not in recalled["summary"]


@pytest.mark.parametrize("tenant", ["", "   "])
def test_blank_tenants_exit_2_and_create_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tenant: str
) -> None:
    db = str(tmp_path / "t.db")
    path = write(tmp_path / "e.jsonl", [SEED])
    for argv in (["add", path], ["recall", "user-7"]):
        capsys.readouterr()
        assert run(db, *argv, tenant=tenant)[0] == 2
        err = capsys.readouterr().err
        assert "--tenant" in err and "blank" in err and err.count("\n") == 1
    assert not Path(db).exists()


class RefusingStore:
    """Stands in for a store whose own check refuses the second event of the batch."""

    policy = None

    def append(self, tenant: str, events: list[Any], progress: Any = None) -> list[Appended]:
        raise NotFound("superseded event 'x' does not exist", line=2, field="supersedes")

    def close(self) -> None:
        pass


def test_store_errors_are_mapped_to_the_lines_the_events_came_from() -> None:
    memory = Memory(store=RefusingStore())  # type: ignore[arg-type]
    events = [GOOD, {**GOOD, "id": "m-2", "supersedes": "x"}]
    with pytest.raises(NotFound) as err:
        memory.add(events, lines=[1, 5])
    assert (err.value.line, err.value.field) == (5, "supersedes")
    assert str(err.value).startswith("line 5, field 'supersedes'")
    with pytest.raises(BadInput) as err:
        memory.add(events)
    assert err.value.line == 2


def test_store_level_errors_name_the_file_line(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seeded(db_url, tmp_path)
    path = write(tmp_path / "e.jsonl", good_then({**GOOD, "id": "m-2", "supersedes": "nope"}))
    refused(db_url, path, capsys, 3, "supersedes")


# -- defect 5: stdin and Ctrl-C, in a real process --


def cli(*argv: str, **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        [sys.executable, "-c", CLI, *argv], env=env, capture_output=True, timeout=120, **kwargs
    )


def test_closed_stdin_exits_2_with_one_line(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        ["bash", "-c", 'exec "$0" "$@" <&-', sys.executable, "-c", CLI, "add", "-", "--db", db],
        env=env,
        capture_output=True,
        timeout=120,
    )
    err = done.stderr.decode()
    assert done.returncode == 2 and err.count("\n") == 1, err
    assert err == "memlineage: field 'file': stdin is closed; give a FILE or pipe events in\n"
    assert not Path(db).exists()


def test_non_utf8_stdin_is_reported_as_such(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    data = json.dumps(SEED).encode() + b'\n{"id": "m-2", "subject": "u", "text": "caf\xe9"}\n'
    done = cli("add", "-", "--db", db, input=data)
    err = done.stderr.decode()
    assert done.returncode == 2 and err.count("\n") == 1, err
    assert "line 2" in err and "stdin is not UTF-8" in err
    assert not Path(db).exists()


def _wait_inside_write(db_url: str, child: subprocess.Popen[bytes]) -> bool:
    """True once ``child`` holds a write transaction that has not committed yet."""
    inside = _sqlite_write_held if not db_url.startswith("postgresql") else _pg_write_open
    deadline = time.monotonic() + 60
    while child.poll() is None and time.monotonic() < deadline:
        if inside(db_url):
            return True
        time.sleep(0.002)
    return False


def _sqlite_write_held(path: str) -> bool:
    conn = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True  # the child holds the write lock
    finally:
        conn.close()


def _pg_write_open(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = 'ml-interrupted' AND backend_xid IS NOT NULL"
        ).fetchone()
    return bool(row and row[0])


def _as_from_a_terminal() -> None:
    """In the child: Ctrl-C acts as at a terminal, even when the tests run in a
    background job (``cmd &``), whose children start with SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt_add(db_url: str, tmp_path: Path, size: int) -> tuple[int | None, str]:
    rows = [{"id": f"i-{i}", "subject": "user-7", "text": f"Note {i}."} for i in range(size)]
    path = write(tmp_path / f"big-{size}.jsonl", rows)
    url = db_url
    if db_url.startswith("postgresql"):
        url += "&application_name=ml-interrupted"
    env = {**os.environ, "PYTHONPATH": SRC}
    child = subprocess.Popen(
        [sys.executable, "-c", CLI, "add", path, "--db", url, "--tenant", "acme"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_as_from_a_terminal,
    )
    caught = _wait_inside_write(db_url, child)
    if caught:
        child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=120)
    return (child.returncode if caught else None), err.decode()


@pytest.mark.slow
def test_ctrl_c_inside_the_write_exits_130_without_traceback_and_writes_nothing(
    db_url: str, tmp_path: Path
) -> None:
    seeded(db_url, tmp_path)
    before = dump(db_url)
    code, err = _interrupt_add(db_url, tmp_path, 30_000)
    assert code is not None, "the add finished before its write could be interrupted"
    assert code == 130 and err == "memlineage: interrupted\n", err
    assert dump(db_url) == before


def _add_blocked_then_interrupted(pg_url: str, path: str) -> str:
    """Runs ``add`` while this test holds user-7's clock row; Ctrl-C once it waits for it."""
    env = {**os.environ, "PYTHONPATH": SRC}
    url = pg_url + "&application_name=ml-waiting"
    with psycopg.connect(pg_url) as holder:
        holder.execute("SELECT 1 FROM clocks WHERE subject = 'user-7' FOR UPDATE")
        child = subprocess.Popen(
            [sys.executable, "-c", CLI, "add", path, "--db", url, "--tenant", "acme"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=_as_from_a_terminal,
        )
        assert _eventually(lambda: _waiting_on_lock(pg_url), child)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        holder.rollback()
    assert child.returncode == 130, err
    return err.decode()


@pytest.mark.slow
def test_ctrl_c_while_waiting_for_the_subjects_lock_writes_nothing(
    pg_url: str, tmp_path: Path
) -> None:
    seeded(pg_url, tmp_path)
    before = dump(pg_url)
    rows = [{"id": f"w-{i}", "subject": "user-7", "text": f"Note {i}."} for i in range(10)]
    err = _add_blocked_then_interrupted(pg_url, write(tmp_path / "w.jsonl", rows))
    assert err == "memlineage: interrupted\n"
    assert dump(pg_url) == before


@pytest.mark.slow
def test_ctrl_c_during_a_multi_subject_add_keeps_no_subject(pg_url: str, tmp_path: Path) -> None:
    seeded(pg_url, tmp_path)
    before = dump(pg_url)
    rows = [{"id": "w-0", "subject": "user-6", "text": "Note 0."}]  # its own subject, first
    rows += [{"id": f"w-{i}", "subject": "user-7", "text": f"Note {i}."} for i in range(1, 10)]
    err = _add_blocked_then_interrupted(pg_url, write(tmp_path / "w.jsonl", rows))
    assert err == "memlineage: interrupted\n"
    assert dump(pg_url) == before


def _waiting_on_lock(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = 'ml-waiting' AND wait_event_type = 'Lock'"
        ).fetchone()
    return bool(row and row[0])


def _eventually(check: Callable[[], bool], child: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + 60
    while child.poll() is None and time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return False


class ClosedPipe(io.StringIO):
    """stdout whose reader went away (``| head -c 1``): every write fails with EPIPE."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_reader_closing_stdout_early_stops_quietly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "e.jsonl", [SEED])
    assert main(["extract", path, "--json"], stdout=ClosedPipe()) == 141
    assert capsys.readouterr().err == ""
