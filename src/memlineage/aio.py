"""``AsyncMemory``: the library API for coroutines (FastAPI handlers, LangGraph nodes).

>>> from memlineage import AsyncMemory
>>> async with AsyncMemory("memlineage.db", tenant="acme") as memory:
...     await memory.add([{"id": "m-1", "subject": "user-7", "text": "Never email after 9 pm."}])
...     (await memory.recall("user-7")).mode

Every public method of :class:`memlineage.Memory` is here as a coroutine with the
same arguments and result.

On PostgreSQL the store is psycopg's async connection pool
(memlineage.store.async_store): reads and writes run on the event loop and await
the server, so a task that waits for a lock or a slow query holds neither a
thread nor the loop; many tasks share the pool's connections. The work that
is mostly CPU (consolidation, verification, evaluation, embedding, detection,
a worker's jobs, audit and sweep) runs in this object's thread pool instead,
so it never holds the loop; its statements still go through the same async
pool. The pool belongs to the event loop of the first call: use one
``AsyncMemory`` per loop.

On SQLite (no asynchronous driver exists for it that is not itself a thread)
every call runs in the thread pool, whose size is the number of transactions
the store runs at once (1), so tasks queue for it instead of piling up
threads. ``progress`` callbacks are called from the thread that does the work.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from memlineage.api import Memory
from memlineage.recall.embed import Embedder
from memlineage.store import AsyncStore, async_store
from memlineage.store.bridge import run_bridged

P = ParamSpec("P")
R = TypeVar("R")


def awaited(
    method: Callable[Concatenate[Memory, P], R], *, cpu: bool = False
) -> Callable[Concatenate[AsyncMemory, P], Coroutine[Any, Any, R]]:
    """``Memory.method`` as a coroutine method of ``AsyncMemory``.

    ``cpu``: mostly computation, run in the thread pool even on PostgreSQL.
    """
    name = method.__name__

    async def call(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        bound: Callable[P, R] = getattr(self.memory, name)
        return await self._run(functools.partial(bound, *args, **kwargs), cpu=cpu)

    functools.update_wrapper(call, method)  # the name and docstring of Memory's method
    return call


class AsyncMemory:
    """Memory of one tenant, for coroutines: ``Memory``'s methods, awaited."""

    def __init__(
        self,
        db: str | None = None,
        *,
        max_workers: int | None = None,
        **options: Any,
    ) -> None:
        """Open the store as ``Memory(db, **options)`` does. On SQLite this blocks once, while
        the file opens; on PostgreSQL nothing connects until the first call (a refused
        connection raises there). ``max_workers``: the thread pool's size (default:
        ``store.parallelism()``)."""
        store = async_store(db) if "store" not in options else None
        self._unopened: AsyncStore | None = store
        if store is not None:
            self._create = options.pop("create", True)
            self.memory = Memory(store=store, **options)
        else:
            self.memory = Memory(db, **options)
        self.on_loop = store is not None  # reads and writes awaited on the event loop
        self.tenant = self.memory.tenant
        workers = max_workers or self.memory.store.parallelism()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="memlineage")
        self._opening = asyncio.Lock()

    async def _run(self, call: Callable[[], R], *, cpu: bool = False) -> R:
        if self._unopened is not None:
            await self._open()
        if self.on_loop and not cpu:
            return await run_bridged(call)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    async def _open(self) -> None:
        async with self._opening:
            store = self._unopened
            if store is not None:
                await store.open(create=self._create)
                self._unopened = None

    # -- raw layer --
    add = awaited(Memory.add)
    add_messages = awaited(Memory.add_messages)
    extract = awaited(Memory.extract, cpu=True)
    revoke = awaited(Memory.revoke)
    trust = awaited(Memory.trust)
    conflict = awaited(Memory.conflict)
    resolve = awaited(Memory.resolve)
    dismiss = awaited(Memory.dismiss)
    detect = awaited(Memory.detect, cpu=True)
    erase = awaited(Memory.erase)
    events = awaited(Memory.events)
    # -- policies --
    policy = awaited(Memory.policy)
    policy_history = awaited(Memory.policy_history)
    set_temporal_policy = awaited(Memory.set_temporal_policy)
    set_trust_policy = awaited(Memory.set_trust_policy)
    # -- lineage and audit --
    lineage = awaited(Memory.lineage)
    why = awaited(Memory.why)
    audit = awaited(Memory.audit, cpu=True)
    sweep = awaited(Memory.sweep, cpu=True)
    optimize = awaited(Memory.optimize, cpu=True)
    # -- derived layer --
    consolidate = awaited(Memory.consolidate, cpu=True)
    consolidate_many = awaited(Memory.consolidate_many, cpu=True)
    generator = awaited(Memory.generator)
    verify = awaited(Memory.verify, cpu=True)
    artifacts = awaited(Memory.artifacts)
    artifact = awaited(Memory.artifact)
    subjects = awaited(Memory.subjects)
    rank = awaited(Memory.rank)
    has_subject = awaited(Memory.has_subject)
    # -- release --
    release_mode = awaited(Memory.release_mode)
    rollout = awaited(Memory.rollout)
    configs = awaited(Memory.configs)
    reviews = awaited(Memory.reviews)
    review = awaited(Memory.review)
    approve = awaited(Memory.approve)
    reject = awaited(Memory.reject)
    release_fail = awaited(Memory.release_fail)
    # -- evaluation, keys, jobs --
    eval = awaited(Memory.eval, cpu=True)
    eval_runs = awaited(Memory.eval_runs)
    create_key = awaited(Memory.create_key)
    list_keys = awaited(Memory.list_keys)
    revoke_key = awaited(Memory.revoke_key)
    queue = awaited(Memory.queue)
    schedule = awaited(Memory.schedule)
    jobs = awaited(Memory.jobs)
    set_tail_threshold = awaited(Memory.set_tail_threshold)
    work = awaited(Memory.work, cpu=True)
    # -- embeddings --
    embed = awaited(Memory.embed, cpu=True)

    recall = awaited(Memory.recall)

    async def embedder(self) -> Embedder:
        """The embedder ``embed`` uses (made on first use: the default loads a model)."""
        return await self._run(lambda: self.memory.embedder, cpu=True)

    async def tail_threshold(self) -> int:
        """``Memory.tail_threshold`` (a property there), awaited."""
        return await self._run(lambda: self.memory.tail_threshold)

    # -- lifetime --

    async def close(self) -> None:
        """Close the store (if this object opened it) once running calls are done."""
        await asyncio.to_thread(self._pool.shutdown)  # waits for the calls in its threads
        if not self.on_loop:
            self.memory.close()
        elif self._unopened is None:  # opened: close the async pool on its loop
            await run_bridged(self.memory.store.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
