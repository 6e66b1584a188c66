"""The guided demo (`make run`), as a newcomer reads it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def test_the_demo_explains_a_negative_token_reduction_it_calls_passed(tmp_path: Path) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "memlineage", "demo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    reduction = re.search(r"token_reduction +(-?[0-9.]+)", shown)
    assert reduction is not None, shown
    lines = shown.splitlines()
    assert lines[-1] == "passed"
    if float(reduction.group(1)) < 0:
        assert lines[-2].strip().startswith("(negative: the summary"), lines[-3:]
        assert "blocks past 50 events" in lines[-2]
