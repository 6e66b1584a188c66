"""Recall on one large subject, against a bare read of its rows, in the same run.

A subject of ``--sizes`` events is consolidated once (the built-in generator,
its default budget) and given 3 events after it, as an agent's memory between
two runs. Then, ``--samples`` times each: the bare read of the subject's event
rows (``bench_recall_latency.bare_read``), ``Memory.recall(subject)`` without a
query, and ``Memory.recall(subject, query=..., budget=500)`` with a question.

Shapes (``--shape``):

- ``locomo``: LoCoMo's dialogue turns, every conversation in one subject, asked
  LoCoMo's own questions in turn (what a chat agent with a long history asks);
- ``synthetic``: ``bench/synthetic.py``'s stream (preferences, constraints,
  decisions, tasks, facts, small talk), asked six-word questions from its words.

Reported: p50 of each, and each recall's p50 over the bare read's. A recall whose
cost follows what it returns stays near the bare read as the subject grows.
``--profile`` prints where a recall with a query spends its time.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import pstats
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_recall_latency import bare_read
from common import LOCOMO, open_memory, percentile, report
from memlineage import Memory
from memlineage.operations.locomo import load
from synthetic import fill, quiet_tail, stream

SUBJECT = "large"
BUDGET = 500


def locomo_lines(count: int) -> tuple[list[dict[str, Any]], list[str]]:
    """The first ``count`` turns of LoCoMo in one subject, and LoCoMo's questions."""
    conversations = load(LOCOMO)
    day0 = datetime(2023, 1, 1, tzinfo=UTC)
    lines: list[dict[str, Any]] = []
    for conversation in conversations:
        for turn in conversation.turns:
            at = day0 + timedelta(minutes=len(lines))
            lines.append(
                {
                    "id": turn.id,
                    "subject": SUBJECT,
                    "text": turn.text,
                    "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                }
            )
    questions = [q.question for c in conversations for q in c.qa]
    return lines[:count], questions


def synthetic_questions(count: int) -> list[str]:
    """Six-word questions drawn from the words of the synthetic stream."""
    words = sorted({w.strip(".,!?'$:") for e in stream("q", 500) for w in e["text"].split()})
    words = [w for w in words if w.isalpha() and len(w) > 2]
    rng = random.Random(5)
    return [" ".join(rng.sample(words, 6)) for _ in range(count)]


def build(memory: Memory, shape: str, size: int) -> list[str]:
    """Fill and consolidate the subject, add 3 events after it; the questions to ask."""
    if shape == "locomo":
        lines, questions = locomo_lines(size)
        for first in range(0, len(lines), 5_000):
            memory.add(lines[first : first + 5_000])
    else:
        fill(memory, SUBJECT, size)
        questions = synthetic_questions(200)
    memory.consolidate(SUBJECT)
    memory.add(quiet_tail(SUBJECT, 3, start=10 * size))
    memory.work()
    return questions


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def measure(memory: Memory, questions: list[str], samples: int, label: str) -> None:
    bare: list[float] = []
    plain: list[float] = []
    queried: list[float] = []
    for n in range(samples):
        question = questions[n % len(questions)]
        bare.append(timed(lambda: bare_read(memory, SUBJECT)))
        plain.append(timed(lambda: memory.recall(SUBJECT)))
        queried.append(timed(functools.partial(memory.recall, SUBJECT, question, BUDGET)))
    floor = percentile(bare, 50)
    report(f"{label}: bare read p50", floor, "ms")
    for name, samples_ms in (("no query", plain), ("query+budget", queried)):
        p50 = percentile(samples_ms, 50)
        report(f"{label}: recall, {name} p50", p50, "ms", "bare read", p50 / floor)


def profile(memory: Memory, questions: list[str]) -> None:
    profiler = cProfile.Profile()
    profiler.enable()
    for question in questions[:20]:
        memory.recall(SUBJECT, query=question, budget=BUDGET)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--shape", choices=("locomo", "synthetic"), default="locomo")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 5_882])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    for size in args.sizes:
        with open_memory(args.backend) as memory:
            questions = build(memory, args.shape, size)
            memory.optimize()
            label = f"{args.backend} {args.shape} {size:,}"
            measure(memory, questions, args.samples, label)
            if args.profile:
                profile(memory, questions)
    return 0


if __name__ == "__main__":
    sys.exit(main())
