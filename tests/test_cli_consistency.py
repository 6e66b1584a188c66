"""The command line behaves the same way across commands, on both backends.

An unknown subject is the same refusal for ``recall`` and ``consolidate``; a
tenant with no events says so; with ``--json`` an error is one JSON document on
stdout as well as its line on stderr; ``add`` at a terminal says it reads stdin;
``--help`` lists the commands by topic.
"""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import memlineage
from memlineage import Memory
from memlineage.interfaces.cli import main, root

SRC = str(Path(memlineage.__file__).resolve().parents[1])
CLI = "import sys; from memlineage.interfaces.cli import main; sys.exit(main())"
EVENT = {"id": "m-1", "subject": "user-7", "text": "Never deploy on Fridays."}


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), stdout=out)
    return code, out.getvalue()


@pytest.fixture
def seeded(db_url: str) -> str:
    with Memory(db_url, tenant="acme") as memory:
        memory.add([EVENT])
    return db_url


@pytest.mark.parametrize("verb", ["recall", "consolidate"])
def test_an_unknown_subject_is_the_same_refusal_for_recall_and_consolidate(
    seeded: str, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = cli(verb, "nobody", "--db", seeded, "--tenant", "acme")
    assert (code, out) == (2, "")
    assert (
        capsys.readouterr().err == "memlineage: field 'subject': no events for subject 'nobody'\n"
    )


@pytest.mark.parametrize("argv", [["recall", "user-7"], ["consolidate", "user-7"]])
def test_a_tenant_without_events_is_named_as_the_likely_mistake(
    seeded: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = cli(*argv, "--db", seeded, "--tenant", "acmee")
    assert (code, out) == (2, "")
    assert capsys.readouterr().err == (
        "memlineage: field 'tenant': tenant 'acmee' has no events, so no subject either;"
        " check --tenant and --db\n"
    )


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["recall", "nobody"], "NotFound"),
        (["revoke", "m-404"], "NotFound"),
        (["consolidate", "user-7", "--budget", "0"], "BadParameter"),
        (["recall", "user-7", "--no-such-option"], "NoSuchOption"),
    ],
)
def test_with_json_an_error_is_one_json_document_on_stdout_and_one_line_on_stderr(
    seeded: str, argv: list[str], kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = cli(*argv, "--db", seeded, "--tenant", "acme", "--json")
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("memlineage: ") and err.count("\n") == 1
    assert out.count("\n") == 1
    doc: dict[str, Any] = json.loads(out)
    assert doc == {"error": {"code": 2, "type": kind, "message": err[len("memlineage: ") : -1]}}
    code, out = cli(*argv, "--db", seeded, "--tenant", "acme")  # without --json: stdout empty
    assert (code, out) == (2, "")


def test_a_failed_check_is_a_report_not_an_error_document(seeded: str) -> None:
    code, out = cli(
        "why", "user-7", "nothing like it", "--db", seeded, "--tenant", "acme", "--json"
    )
    assert code == 1 and "error" not in json.loads(out)


def test_add_at_a_terminal_says_it_reads_stdin(tmp_path: Path) -> None:
    """A person who types ``memlineage add`` is told what the command waits for."""
    db = str(tmp_path / "m.db")
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", CLI, "add", "--db", db],
        env={**os.environ, "PYTHONPATH": SRC},
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=slave,
    )
    os.close(slave)
    seen = _read_until(master, b"stdin")
    os.write(master, json.dumps(EVENT).encode() + b"\n\x04")  # a line, then Ctrl-D
    out, _ = child.communicate(timeout=60)
    os.close(master)
    assert child.returncode == 0
    assert seen.decode().startswith("memlineage: reading events from stdin")
    assert out.decode() == "appended 1 event(s), 0 already stored\n"


def _read_until(fd: int, marker: bytes) -> bytes:
    seen = b""
    deadline = time.monotonic() + 30
    while marker not in seen:
        assert time.monotonic() < deadline, f"no {marker!r} on the terminal: {seen!r}"
        if select.select([fd], [], [], 0.2)[0]:
            seen += os.read(fd, 4096)
    return seen


def test_add_from_a_pipe_prints_no_hint(tmp_path: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", CLI, "add", "--db", str(tmp_path / "m.db")],
        env={**os.environ, "PYTHONPATH": SRC},
        input=json.dumps(EVENT).encode() + b"\n",
        capture_output=True,
        timeout=60,
    )
    assert (ran.returncode, ran.stderr) == (0, b"")


def test_help_lists_every_command_once_under_its_topic(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("--help")[0] == 0
    text = capsys.readouterr().out + cli("--help")[1]
    headings = [line[:-1] for line in text.splitlines() if line[:1].isalpha() and line[-1:] == ":"]
    assert headings == [
        "Options",
        "Events (the raw layer)",
        "Conflicts and policies",
        "Summaries and recall",
        "Lineage",
        "Jobs and workers",
        "Evaluation and release",
        "Serving",
        "Getting started",
    ]
    listed = [
        line.split()[0] for line in text.splitlines() if line.startswith("  ") and line[2] != " "
    ]
    for name in root.commands:
        assert listed.count(name) == 1, name
    section = text.split("Serving:")[1].split("\n\n")[0]
    assert [line.split()[0] for line in section.strip().splitlines()] == ["serve", "mcp", "keys"]


@pytest.mark.parametrize("verb", ["serve", "mcp"])
def test_serve_and_mcp_offer_no_json(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(verb, "--help")[0] == 0
    assert "--json" not in capsys.readouterr().out + cli(verb, "--help")[1]
    code, _ = cli(verb, "--json")
    assert code == 2 and "No such option '--json'" in capsys.readouterr().err
