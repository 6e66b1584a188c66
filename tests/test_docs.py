"""The Python examples of the README and docs/ run as written (each file's blocks in order,
in a fresh folder), so the documentation cannot drift from the API."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def blocks(page: Path) -> list[str]:
    return BLOCK.findall(page.read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)], ids=lambda p: p.name)
def test_python_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MEMLINEAGE_DB", raising=False)
    # an example may set variables (docs/generators.md sets MEMLINEAGE_CONFIG): they end
    # with the test, as monkeypatch restores what it saw
    for name in ("MEMLINEAGE_CONFIG",):
        monkeypatch.setenv(name, os.environ.get(name, ""))
        monkeypatch.delenv(name)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for number, code in enumerate(blocks(page), start=1):
        try:
            exec(compile(code, f"{page.name}[{number}]", "exec"), namespace)
        except Exception as exc:  # report the page and block, not a bare traceback
            pytest.fail(f"{page.name}, python block {number}: {type(exc).__name__}: {exc}")
    assert os.getcwd() == str(tmp_path)
