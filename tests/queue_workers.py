"""Entry points of the processes that stress the job queue beside real workers.

Each opens its own store (its own connection), as a separate agent would.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any

from memlineage import MemlineageError, Memory
from memlineage.raw.validity import source_state


def subject_name(index: int) -> str:
    return f"s{index:03d}"


def seed_subjects(url: str, tenant: str, subjects: int, per_subject: int) -> None:
    with Memory(url, tenant=tenant) as memory:
        for s in range(subjects):
            subject = subject_name(s)
            memory.add(
                [
                    {"id": f"{subject}-e{i}", "subject": subject, "text": note(subject, i)}
                    for i in range(per_subject)
                ]
            )


def note(subject: str, i: int) -> str:
    if i % 3 == 0:
        return f"The budget of {subject} is at most {100 + i} EUR."
    if i % 3 == 1:
        return f"Never call {subject} before {7 + i % 5}:00."
    return f"Note {i} about {subject}."


def valid_ids(memory: Memory, subject: str) -> list[str]:
    with memory.store.reader(memory.tenant) as reader:
        events = reader.events(subject)
        ops = reader.operations(subject)
    state = source_state(events, ops, memory.store.policy)
    return [e.id for e in events if state.is_valid(e)]


def mutate(url: str, tenant: str, subjects: int, seconds: float, seed: int, results: Any) -> None:
    """Append, revoke, replace and declare conflicts on random subjects until the deadline."""
    rng = random.Random(seed)
    done: Counter[str] = Counter()
    deadline = time.monotonic() + seconds
    n = 0
    with Memory(url, tenant=tenant) as memory:
        while time.monotonic() < deadline:
            n += 1
            subject = subject_name(rng.randrange(subjects))
            roll = rng.random()
            try:
                if roll < 0.55:
                    memory.add(
                        [
                            {
                                "id": f"{subject}-w{seed}-{n}-{k}",
                                "subject": subject,
                                "text": note(subject, n + k),
                            }
                            for k in range(rng.randint(1, 3))
                        ]
                    )
                    done["append"] += 1
                    continue
                valid = valid_ids(memory, subject)
                if not valid:
                    continue
                target = rng.choice(valid)
                if roll < 0.7:
                    memory.revoke(target)
                    done["revoke"] += 1
                elif roll < 0.85:
                    memory.add(
                        [
                            {
                                "id": f"{subject}-r{seed}-{n}",
                                "subject": subject,
                                "text": note(subject, n),
                                "supersedes": target,
                            }
                        ]
                    )
                    done["replace"] += 1
                else:
                    others = [v for v in valid if v != target]
                    if others:
                        memory.conflict(target, rng.choice(others))
                        done["conflict"] += 1
            except MemlineageError:
                done["refused"] += 1
            time.sleep(0.005)
    results.put(dict(done))
