"""A core install (no ``server`` or ``mcp`` extra): ``serve`` and ``mcp`` say what to install.

The development environment has every extra, so a missing one is simulated in a
real process: ``sys.modules[name] = None`` makes ``import name`` fail exactly as
an absent package does (``ModuleNotFoundError``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import memlineage

SRC = str(Path(memlineage.__file__).resolve().parents[1])


def without(modules: list[str], *argv: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\n"
        f"for name in {modules!r}: sys.modules[name] = None\n"
        "from memlineage.interfaces.cli import main\n"
        f"sys.exit(main({list(argv)!r}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("modules", "argv", "line"),
    [
        (
            ["fastapi"],
            ["serve", "--port", "1"],
            "memlineage: serve needs the server extra (module 'fastapi' is not installed):"
            " pip install 'memlineage[server]'",
        ),
        (
            ["uvicorn"],
            ["serve"],
            "memlineage: serve needs the server extra (module 'uvicorn' is not installed):"
            " pip install 'memlineage[server]'",
        ),
        (
            ["mcp"],
            ["mcp", "--tenant", "acme"],
            "memlineage: mcp needs the mcp extra (module 'mcp' is not installed):"
            " pip install 'memlineage[mcp]'",
        ),
    ],
)
def test_a_missing_extra_is_one_line_naming_it_and_exit_2(
    tmp_path: Path, modules: list[str], argv: list[str], line: str
) -> None:
    db = str(tmp_path / "m.db")
    ran = without(modules, *argv, "--db", db)
    assert (ran.returncode, ran.stdout) == (2, ""), ran.stderr
    assert ran.stderr == line + "\n"
    assert not Path(db).exists()  # refused before anything was opened


def test_the_core_commands_need_no_extra(tmp_path: Path) -> None:
    events = tmp_path / "e.jsonl"
    events.write_text('{"id": "m-1", "subject": "user-7", "text": "Never deploy on Fridays."}\n')
    every_extra = ["fastapi", "uvicorn", "jinja2", "mcp", "langgraph", "swagger_ui_bundle"]
    db = str(tmp_path / "m.db")
    assert without(every_extra, "add", str(events), "--db", db).returncode == 0
    ran = without(every_extra, "recall", "user-7", "--db", db)
    assert ran.returncode == 0 and "Never deploy on Fridays." in ran.stdout
