"""Entry points of the real processes that concurrency and crash tests start.

They open their own store (their own connection), as separate agents would.
"""

from __future__ import annotations

import os
import signal
from typing import Any

from memlineage import Memory
from memlineage.consolidation.consolidate import prepare


def append_one_by_one(
    url: str, tenant: str, subject: str, prefix: str, count: int, barrier: Any
) -> None:
    with Memory(url, tenant=tenant) as memory:
        barrier.wait()
        for i in range(count):
            memory.add([{"id": f"{prefix}-{i}", "subject": subject, "text": f"note {i}"}])


def append_same_event(url: str, tenant: str, barrier: Any, results: Any) -> None:
    with Memory(url, tenant=tenant) as memory:
        barrier.wait()
        out = memory.add([{"id": "dup-1", "subject": "user-7", "text": "Meet at 10:00"}])
        results.put(out[0].created)


def switch(url: str, tenant: str, artifact_id: str, results: Any) -> None:
    with Memory(url, tenant=tenant) as memory:
        results.put(memory.store.switch(tenant, artifact_id).to_json())


def switch_at_barrier(url: str, tenant: str, artifact_id: str, barrier: Any, results: Any) -> None:
    with Memory(url, tenant=tenant) as memory:
        barrier.wait()
        results.put(("switch", memory.store.switch(tenant, artifact_id).switched))


def revoke_at_barrier(url: str, tenant: str, event_id: str, barrier: Any, results: Any) -> None:
    with Memory(url, tenant=tenant) as memory:
        barrier.wait()
        results.put(("revoke", memory.revoke(event_id).changed))


def write_artifact_then_die(url: str, tenant: str, subject: str, results: Any) -> None:
    """Steps 1–7 complete, then the process is killed before it can switch."""
    with Memory(url, tenant=tenant) as memory:
        artifact = prepare(memory.store, tenant, subject)
        results.put(artifact.id)
        os.kill(os.getpid(), signal.SIGKILL)


def switch_holding_the_lock(
    url: str, tenant: str, artifact_id: str, holding: Any, release: Any, results: Any
) -> None:
    """Switch, but pause after the CAS while still holding the clock lock."""
    with Memory(url, tenant=tenant) as memory:
        store = memory.store
        compare_and_swap = store._compare_and_swap

        def swap_then_wait(*args: Any) -> Any:
            refusal = compare_and_swap(*args)
            holding.set()
            release.wait(60)
            return refusal

        store._compare_and_swap = swap_then_wait  # type: ignore[method-assign]
        results.put(("switch", store.switch(tenant, artifact_id).switched))


def revoke_when_told(url: str, tenant: str, event_id: str, starting: Any, results: Any) -> None:
    with Memory(url, tenant=tenant) as memory:
        starting.set()
        results.put(("revoke", memory.revoke(event_id).changed))


def append_batches_over_subjects(
    url: str, tenant: str, prefix: str, subjects: list[str], rounds: int, barrier: Any, results: Any
) -> None:
    """Batches that each name every subject of ``subjects``, in that order."""
    with Memory(url, tenant=tenant) as memory:
        barrier.wait()
        try:
            for r in range(rounds):
                memory.add(
                    [
                        {"id": f"{prefix}-{r}-{s}", "subject": s, "text": f"note {r}"}
                        for s in subjects
                        for _ in range(1)
                    ]
                )
        except Exception as exc:  # reported, so the test names the failure
            results.put(f"{type(exc).__name__}: {exc}")
            return
        results.put("ok")


def append_flip_flops(url: str, tenant: str, subject: str, rounds: int) -> None:
    """A preference that flips every event, appended with detection deferred (the default)."""
    with Memory(url, tenant=tenant) as memory:
        for i in range(rounds):
            verb = "love" if i % 2 == 0 else "hate"
            at = f"2026-{i // 28 + 1:02d}-{i % 28 + 1:02d}T09:00:00Z"
            memory.add([{"id": f"f-{i}", "subject": subject, "text": f"I {verb} jazz.", "at": at}])


def consolidate_until(url: str, tenant: str, subject: str, rounds: int) -> None:
    """Consolidate in a loop until the subject has ``rounds`` events (and once more)."""
    with Memory(url, tenant=tenant) as memory:
        while True:
            with memory.store.reader(tenant) as reader:
                head = reader.head(subject)
            if head is not None:
                memory.consolidate(subject)
                if head.clock.high_water >= rounds:
                    return


def put_one_key(url: str, tenant: str, writer: str, times: int, barrier: Any) -> None:
    """LangGraph puts of one key, each a new value (the race test's writer)."""
    from memlineage.interfaces.langgraph import MemlineageStore

    store = MemlineageStore(url, tenant=tenant)
    barrier.wait()
    for n in range(times):
        store.put(("memories", "user-7"), "diet", {"content": f"{writer} says {n}"})
    store.close()
