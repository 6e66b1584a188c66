"""Progress bars: on stderr for a person at a terminal, never for a pipe or ``--json``.

Each command runs in a real process whose stderr is a pseudo-terminal (or a
pipe), as a person or a script would run it; what the terminal received is
read from the pty's other end.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import memlineage
from memlineage import Memory

SRC = str(Path(memlineage.__file__).resolve().parents[1])
CLI = "import sys; from memlineage.interfaces.cli import main; sys.exit(main())"
ENV = {**os.environ, "PYTHONPATH": SRC, "COLUMNS": "120"}


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str  # what the terminal (or the pipe) on stderr received


def on_terminal(*argv: str, stdin: bytes = b"") -> Ran:
    """Run the command line with stderr on a pseudo-terminal, stdout and stdin on pipes."""
    master, slave = pty.openpty()
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", CLI, *argv],
            env=ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=slave,
        )
    finally:
        os.close(slave)  # the child holds the terminal now; EOF comes when it exits
    seen = bytearray()
    reader = threading.Thread(target=_drain, args=(master, seen))
    reader.start()
    try:
        out, _ = child.communicate(stdin, timeout=300)
    finally:
        reader.join(timeout=30)
        os.close(master)
    return Ran(child.returncode, out.decode(), seen.decode(errors="replace"))


def _drain(fd: int, into: bytearray) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the last writer of the terminal is gone
            return
        if not chunk:
            return
        into += chunk


def on_pipes(*argv: str, stdin: bytes = b"") -> Ran:
    done = subprocess.run(
        [sys.executable, "-c", CLI, *argv], env=ENV, input=stdin, capture_output=True, timeout=300
    )
    return Ran(done.returncode, done.stdout.decode(), done.stderr.decode())


def one_json_document(out: str) -> Any:
    """stdout holds exactly one JSON document (json.loads refuses anything after it)."""
    assert out.endswith("\n") and out.count("\n") == 1, out
    return json.loads(out)


def jsonl(count: int, subjects: int = 3) -> bytes:
    rows = [
        {"id": f"p-{i}", "subject": f"user-{i % subjects}", "text": f"Note {i} about the garden."}
        for i in range(count)
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def seeded(db: str, count: int = 30, subjects: int = 3) -> None:
    with Memory(db) as memory:
        memory.add([json.loads(line) for line in jsonl(count, subjects).splitlines()])


# -- add --


def test_add_shows_each_step_on_a_terminal(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(jsonl(1200))  # more than one chunk of rows is written
    ran = on_terminal("add", str(path), "--db", db_url)
    assert ran.code == 0, ran.err
    assert ran.out == "appended 1200 event(s), 0 already stored\n"
    for label in ("checking", "appending", "detecting"):
        assert re.search(rf"{label} +\[#+\] +100%", ran.err), ran.err
    assert "reading" not in ran.err  # a file is read at once; only stdin is counted as it comes
    with Memory(db_url) as memory:
        assert len(memory.events("user-0")) == 400


def test_add_from_stdin_counts_lines_as_they_arrive(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    ran = on_terminal("add", "-", "--db", db, stdin=jsonl(300))
    assert ran.code == 0 and ran.out == "appended 300 event(s), 0 already stored\n"
    assert re.search(r"reading +\[[^]]*\] +300\b", ran.err), ran.err  # no total: a count
    assert "checking" in ran.err and "appending" in ran.err


def test_add_with_json_on_a_terminal_prints_no_bar(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_bytes(jsonl(300))
    ran = on_terminal("add", str(path), "--db", str(tmp_path / "m.db"), "--json")
    assert ran.code == 0 and ran.err == ""
    assert one_json_document(ran.out)["appended"] == 300


def test_add_with_stderr_on_a_pipe_prints_no_bar(tmp_path: Path) -> None:
    ran = on_pipes("add", "-", "--db", str(tmp_path / "m.db"), stdin=jsonl(300))
    assert (ran.code, ran.err) == (0, "")
    ran = on_pipes("add", "-", "--db", str(tmp_path / "m.db"), "--json", stdin=jsonl(300))
    assert (ran.code, ran.err) == (0, "")
    assert one_json_document(ran.out)["existing"] == 300


def test_library_add_reports_steps_that_end_at_their_totals(db_url: str) -> None:
    reports: list[tuple[str, int, int | None]] = []
    events = [json.loads(line) for line in jsonl(2500, subjects=2).splitlines()]
    with Memory(db_url, detect_after_add=True) as memory:  # detection is a step here
        memory.add(events, progress=lambda *r: reports.append(r))
    steps = list(dict.fromkeys(step for step, _, _ in reports))
    assert steps == ["appending", "detecting"]
    for step in steps:
        mine = [(done, total) for s, done, total in reports if s == step]
        assert mine[0] == (0, 2500) and mine[-1] == (2500, 2500)
        assert [d for d, _ in mine] == sorted(d for d, _ in mine)
    assert len([r for r in reports if r[0] == "appending"]) > 2  # in chunks, not all at once


# -- consolidate, policy rollout, eval, release fail --


@pytest.mark.parametrize(
    ("argv", "label"),
    [
        (["consolidate", "user-0", "user-1", "user-2"], "consolidating"),
        (["consolidate", "--all", "--force"], "consolidating"),
        (["policy", "trust", "--admit", "user", "--batch", "2"], "rolling out"),
        (["eval", "--no-save"], "rebuilding"),
        (["release", "fail"], "recovering"),
    ],
    ids=["consolidate", "consolidate-all-force", "policy-trust", "eval", "release-fail"],
)
def test_long_work_over_subjects_shows_a_bar_only_on_a_terminal(
    tmp_path: Path, argv: list[str], label: str
) -> None:
    db = str(tmp_path / "m.db")
    seeded(db)
    ran = on_terminal(*argv, "--db", db)
    assert ran.code == 0, ran.err
    assert re.search(rf"{label} +\[#+\] +100%", ran.err), ran.err
    ran = on_terminal(*argv, "--db", db, "--json")
    assert ran.code == 0 and ran.err == ""
    one_json_document(ran.out)
    ran = on_pipes(*argv, "--db", db)
    assert (ran.code, ran.err) == (0, ""), ran.err
    ran = on_pipes(*argv, "--db", db, "--json")
    assert (ran.code, ran.err) == (0, "")
    one_json_document(ran.out)


def test_one_subject_consolidates_without_a_bar(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    seeded(db)
    ran = on_terminal("consolidate", "user-0", "--db", db)
    assert ran.code == 0 and ran.err == ""
    assert re.fullmatch(r"summary:user-0:\d{6}-[0-9a-f]{8}: published, switched=True\n", ran.out)


def test_an_unknown_subject_is_refused_before_any_work_or_bar(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    seeded(db)
    ran = on_terminal("consolidate", "user-0", "nobody", "user-1", "--db", db)
    assert ran.code == 2 and ran.out == ""
    assert ran.err == "memlineage: field 'subject': no events for subject 'nobody'\r\n"
