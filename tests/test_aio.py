"""``AsyncMemory`` from coroutines, on both backends: Memory's methods awaited, many tasks at
once, and an event loop that keeps running while the store works."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from memlineage import AsyncMemory, BadInput, Memory, StoreError


def test_every_public_method_of_memory_is_a_coroutine_here() -> None:
    public = {n for n in dir(Memory) if not n.startswith("_")} - {"tail_threshold"}
    for name in sorted(public):
        assert inspect.iscoroutinefunction(getattr(AsyncMemory, name)), name
        if name != "close":  # the others document themselves with Memory's words
            assert getattr(AsyncMemory, name).__doc__ == getattr(Memory, name).__doc__, name
    assert inspect.iscoroutinefunction(AsyncMemory.tail_threshold)


async def one_agent(memory: AsyncMemory, n: int) -> str:
    subject = f"user-{n}"
    said = [{"role": "user", "content": f"Never call me before {n % 12 + 1} am."}]
    await memory.add_messages(subject, said, thread="t-1")
    await memory.add_messages(subject, said, thread="t-1")  # a retry: nothing new
    await memory.consolidate(subject)
    recalled = await memory.recall(subject, query="call", budget=200)
    return recalled.summary or ""


async def many_agents(db: str, tasks: int) -> tuple[list[str], int, list[int]]:
    ticks = 0
    stop = asyncio.Event()

    async def heartbeat() -> None:  # runs only while no call holds the event loop
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    async with AsyncMemory(db, tenant="acme") as memory:
        beating = asyncio.create_task(heartbeat())
        summaries = await asyncio.gather(*(one_agent(memory, n) for n in range(tasks)))
        stop.set()
        await beating
        counts = [len(await memory.events(f"user-{n}")) for n in range(tasks)]
    return list(summaries), ticks, counts


def test_many_tasks_at_once_each_see_their_own_memory(db_url: str) -> None:
    summaries, ticks, counts = asyncio.run(many_agents(db_url, 30))
    for n, summary in enumerate(summaries):
        assert f"Never call me before {n % 12 + 1} am." in summary, (n, summary)
    assert counts == [1] * 30
    assert ticks > 30  # the loop kept running between and during the store's work
    with Memory(db_url, tenant="acme") as memory:
        assert len(memory.subjects()) == 30


def test_errors_and_results_are_those_of_memory(db_url: str) -> None:
    async def run() -> None:
        async with AsyncMemory(db_url, tenant="acme") as memory:
            await memory.add([{"id": "m-1", "subject": "user-7", "text": "I love jazz."}])
            with pytest.raises(BadInput) as refused:
                await memory.add([{"id": "m-2", "subject": "user-7"}])
            assert "field '[0].text'" in str(refused.value)
            both = await memory.recall(subjects=["user-7"], budget=100)
            assert [r.subject for r in both.recalls] == ["user-7"]
            assert [e.state for e in await memory.events("user-7")] == ["valid"]
            assert await memory.tail_threshold() == 100
            assert memory.memory.store.parallelism() == (1 if "://" not in db_url else 4)

    asyncio.run(run())


# -- PostgreSQL: the store's reads and writes are awaited on the event loop --


def test_on_postgres_a_task_waiting_for_a_lock_holds_no_thread(pg_url: str) -> None:
    """One thread for the whole object, one subject locked by another connection: calls for
    other subjects still run, and the locked one finishes once the lock goes."""
    import psycopg

    async def run() -> None:
        async with AsyncMemory(pg_url, tenant="acme", max_workers=1) as memory:
            await memory.add([{"id": "m-1", "subject": "user-1", "text": "I like tea."}])
            with psycopg.connect(pg_url, autocommit=True) as other, other.transaction():
                other.execute(
                    "SELECT 1 FROM clocks WHERE tenant = 'acme' AND subject = 'user-1' FOR UPDATE"
                )
                waiting = asyncio.create_task(
                    memory.add([{"id": "m-2", "subject": "user-1", "text": "I like coffee."}])
                )
                await asyncio.sleep(0.3)
                assert not waiting.done()  # it waits for the lock...
                given_up = memory.add([{"id": "m-9", "subject": "user-1", "text": "Gone."}])
                with pytest.raises(TimeoutError):  # a cancelled call rolls back cleanly
                    await asyncio.wait_for(given_up, 0.2)
                for n in range(2, 6):  # ...and holds no thread others would queue behind
                    added = memory.add([{"id": f"m-{n}0", "subject": f"user-{n}", "text": "Hi."}])
                    await asyncio.wait_for(added, 5)
                    recalled = await asyncio.wait_for(memory.recall(f"user-{n}"), 5)
                    assert [c.text for c in recalled.context] == ["Hi."]
            await asyncio.wait_for(waiting, 5)
            assert [e.id for e in await memory.events("user-1")] == ["m-1", "m-2"]

    asyncio.run(run())


def test_on_postgres_jobs_and_consolidations_run_off_the_loop(pg_url: str) -> None:
    """A worker's jobs (lease heartbeat thread included) share the async pool."""

    async def run() -> None:
        async with AsyncMemory(pg_url, tenant="acme") as memory:
            await memory.add(
                [{"id": f"m-{n}", "subject": "user-7", "text": f"Note {n}."} for n in range(5)]
            )
            await memory.queue(["user-7"])
            reports = await memory.work()
            assert [r.subject for r in reports] == ["user-7"]
            recalled = await memory.recall("user-7")
            assert recalled.mode == "summary"
            assert "Note 4." in (recalled.summary or "")

    asyncio.run(run())


def test_on_postgres_a_refused_connection_raises_at_the_first_call() -> None:
    async def run() -> None:
        memory = AsyncMemory("postgresql://postgres@127.0.0.1:1/none", tenant="acme")
        with pytest.raises(StoreError) as refused:
            await memory.events("user-7")
        assert "cannot connect to PostgreSQL at postgresql://postgres@127.0.0.1:1/none" in str(
            refused.value
        )
        await memory.close()

    asyncio.run(run())


STORY = [
    {"id": "s-1", "subject": "user-7", "text": "Never email me after 9 pm."},
    {"id": "s-2", "subject": "user-7", "text": "I love jazz."},
    {"id": "s-3", "subject": "user-7", "text": "I hate jazz."},
    {"id": "s-4", "subject": "user-7", "text": "The budget is at most 4,500 EUR."},
    {"id": "s-5", "subject": "user-7", "text": "The budget is 5,000 EUR.", "supersedes": "s-4"},
    {"id": "s-6", "subject": "user-7", "text": "TODO: book the venue for the offsite."},
    {"id": "s-7", "subject": "user-7", "text": "My dentist is Dr. Patel."},
] + [{"id": f"n-{n}", "subject": "user-7", "text": f"I walked {n} km today."} for n in range(70)]


def story_of(memory: Memory) -> dict[str, object]:
    """One workflow through the sync API; what a reader of each answer sees."""
    memory.add(STORY)
    memory.detect("user-7")
    memory.revoke("s-7", reason="wrong dentist")
    built = memory.consolidate("user-7", budget=120)
    memory.erase("n-3", reason="asked to")
    recalled = memory.recall("user-7", query="email jazz budget", budget=150)
    return {
        "switched": built.switched,
        "statements": [s.text for s in built.artifact.output.statements],  # type: ignore[union-attr]
        "cold": list(built.artifact.output.cold),  # type: ignore[union-attr]
        "context": [(p.text, p.origin, p.must_keep) for p in recalled.context],
        "states": [(e.id, e.state) for e in memory.events("user-7")],
        "audit": memory.audit("user-7").ok,
    }


async def async_story(memory: AsyncMemory) -> dict[str, object]:
    await memory.add(STORY)
    await memory.detect("user-7")
    await memory.revoke("s-7", reason="wrong dentist")
    built = await memory.consolidate("user-7", budget=120)
    await memory.erase("n-3", reason="asked to")
    recalled = await memory.recall("user-7", query="email jazz budget", budget=150)
    return {
        "switched": built.switched,
        "statements": [s.text for s in built.artifact.output.statements],  # type: ignore[union-attr]
        "cold": list(built.artifact.output.cold),  # type: ignore[union-attr]
        "context": [(p.text, p.origin, p.must_keep) for p in recalled.context],
        "states": [(e.id, e.state) for e in await memory.events("user-7")],
        "audit": (await memory.audit("user-7")).ok,
    }


def test_on_postgres_the_async_store_answers_as_the_sync_one(pg_url: str) -> None:
    with Memory(pg_url, tenant="sync") as memory:
        expected = story_of(memory)

    async def run() -> dict[str, object]:
        async with AsyncMemory(pg_url, tenant="async") as memory:
            return await async_story(memory)

    assert asyncio.run(run()) == expected
    assert expected["switched"] and expected["audit"]
    assert ("s-7", "revoked") in expected["states"]  # type: ignore[operator]
