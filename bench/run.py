"""Run every benchmark, one after the other: ``make bench`` or ``python bench/run.py``.

Each prints its figures as medians, with ratios against a baseline measured
in the same run. ``--quick`` runs each at smaller scales (the LoCoMo runs are
always whole).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = [
    "bench_store.py",
    "bench_gate.py",
    "bench_extract.py",
    "bench_consolidate.py",
    "bench_cold_run.py",
    "bench_queue.py",
    "bench_job_phases.py",
    "bench_staleness.py",
    "bench_recall_locomo.py",
    "bench_updates.py",
    "bench_recall_latency.py",
    "bench_recall_large.py",
    "bench_llm.py",
    "bench_async.py",
]
QUICK_ARGS = {
    "bench_store.py": [
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
    ],
    "bench_queue.py": [
        "--subjects",
        "50",
        "--queued",
        "10000",
        "--samples",
        "300",
        "--rounds",
        "1",
    ],
    "bench_job_phases.py": ["--subjects", "20"],
    "bench_recall_latency.py": ["--subjects", "1000", "--consolidated", "100", "--samples", "1000"],
    "bench_recall_large.py": ["--sizes", "1000", "--samples", "10"],
    "bench_staleness.py": ["--quick", "--repeats", "3", "--append-events", "2000"],
    "bench_extract.py": ["--quick"],
    "bench_consolidate.py": ["--quick"],
    "bench_cold_run.py": ["--size", "5000", "--runs", "3"],
    "bench_llm.py": ["--quick"],
}


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    failed = 0
    for name in BENCHMARKS:
        print(f"== {name}", flush=True)
        args = [sys.executable, str(HERE / name)]
        if quick:
            args += QUICK_ARGS.get(name, [])
        failed |= subprocess.call(args, cwd=HERE)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
