"""AsyncMemory on PostgreSQL against the thread pool a user would write, in one run.

Many concurrent tasks (an agent server's requests) each add a chat message
and recall its subject with a query. Measured for both:

- memlineage ``AsyncMemory``: statements awaited on psycopg's async pool;
- the baseline: ``Memory`` (psycopg's synchronous pool) called through
  ``loop.run_in_executor`` on a thread pool of the pool's size, what
  ``AsyncMemory`` itself did before.

Reported: operations per second and the event loop's worst stall (the
longest gap between two ticks of a task that only sleeps 1 ms), medians of
``--rounds`` interleaved rounds, with the ratio to the baseline.

    python bench/bench_async.py [--tasks 64] [--ops 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from common import postgres_reachable, report, store_url
from memlineage import AsyncMemory, Memory

Call = Callable[..., Awaitable[Any]]


async def _heartbeat(stop: asyncio.Event, gaps: list[float]) -> None:
    last = time.perf_counter()
    while not stop.is_set():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        gaps.append(now - last)
        last = now


async def _agents(add: Call, recall: Call, tasks: int, ops: int, tag: str) -> tuple[float, float]:
    async def agent(n: int) -> None:
        subject = f"{tag}-user-{n}"
        for op in range(ops):
            said = f"On day {op} I cooked a {('red', 'green', 'blue')[op % 3]} curry for {n}."
            await add([{"id": f"{subject}-{op}", "subject": subject, "text": said}])
            await recall(subject, query="what did I cook", budget=200)

    stop, gaps = asyncio.Event(), []
    beat = asyncio.create_task(_heartbeat(stop, gaps))
    start = time.perf_counter()
    await asyncio.gather(*(agent(n) for n in range(tasks)))
    elapsed = time.perf_counter() - start
    stop.set()
    await beat
    return 2 * tasks * ops / elapsed, max(gaps, default=0.0)


async def _native(url: str, tasks: int, ops: int, tag: str) -> tuple[float, float]:
    async with AsyncMemory(url, tenant="bench") as memory:
        return await _agents(memory.add, memory.recall, tasks, ops, tag)


async def _threads(url: str, tasks: int, ops: int, tag: str) -> tuple[float, float]:
    with Memory(url, tenant="bench") as memory:
        pool = ThreadPoolExecutor(memory.store.parallelism())
        loop = asyncio.get_running_loop()

        async def add(events: list[dict[str, str]]) -> Any:
            return await loop.run_in_executor(pool, memory.add, events)

        async def recall(subject: str, **kw: Any) -> Any:
            return await loop.run_in_executor(pool, lambda: memory.recall(subject, **kw))

        try:
            return await _agents(add, recall, tasks, ops, tag)
        finally:
            pool.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--ops", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not postgres_reachable():
        print("bench_async: PostgreSQL is not reachable; nothing measured")
        return 0
    rates: dict[str, list[float]] = {"native": [], "threads": []}
    stalls: dict[str, list[float]] = {"native": [], "threads": []}
    with store_url("postgres") as url:
        Memory(url, tenant="bench").close()  # migrate once, outside the timing
        for n in range(args.rounds):  # interleaved: the machine's load drifts
            for name, run in (("threads", _threads), ("native", _native)):
                rate, stall = asyncio.run(run(url, args.tasks, args.ops, f"{name}{n}"))
                rates[name].append(rate)
                stalls[name].append(stall)
    base, ours = statistics.median(rates["threads"]), statistics.median(rates["native"])
    print(f"PostgreSQL, {args.tasks} tasks x {args.ops} x (add + recall), medians:")
    report("thread pool + Memory (baseline)", base, "ops/s")
    report("AsyncMemory (async pool)", ours, "ops/s", "baseline", ours / base)
    stall_base = statistics.median(stalls["threads"]) * 1000
    stall_ours = statistics.median(stalls["native"]) * 1000
    report("worst loop stall, baseline", stall_base, "ms")
    report("worst loop stall, AsyncMemory", stall_ours, "ms", "baseline", stall_ours / stall_base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
