"""Run every benchmark, one after the other: ``make bench`` or ``python bench/run.py``.

Each prints its figures as medians, with ratios against a baseline measured
in the same run. Extra arguments go to every benchmark (e.g. ``--quick``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = ["bench_store.py", "bench_gate.py", "bench_queue.py"]


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    failed = 0
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        args = [sys.executable, str(HERE / name)]
        if quick and name == "bench_store.py":
            args += [
                "--subjects",
                "1000",
                "--consolidated",
                "100",
                "--samples",
                "1000",
                "--repeats",
                "3",
                "--append-events",
                "10000",
            ]
        if quick and name == "bench_queue.py":
            args += ["--subjects", "50", "--queued", "10000", "--samples", "300"]
        failed |= subprocess.call(args, cwd=HERE)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
