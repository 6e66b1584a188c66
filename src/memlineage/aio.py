"""``AsyncMemory``: the library API for coroutines (FastAPI handlers, LangGraph nodes).

>>> from memlineage import AsyncMemory
>>> async with AsyncMemory("memlineage.db", tenant="acme") as memory:
...     await memory.add([{"id": "m-1", "subject": "user-7", "text": "Never email after 9 pm."}])
...     (await memory.recall("user-7")).mode

Every public method of :class:`memlineage.Memory` is here as a coroutine with the
same arguments and result. Each call runs the synchronous method in this
object's own thread pool, so the event loop never waits on the database: the
store's drivers (sqlite3, psycopg's connection pool) are synchronous, and every
call is offloaded, reads and writes alike. The pool has as many threads as
the store runs transactions at once (``Store.parallelism()``: the PostgreSQL
pool's size, 1 for SQLite), so many concurrent tasks queue for a thread
instead of piling up threads that would wait for a connection. ``progress``
callbacks are called from that thread.
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

P = ParamSpec("P")
R = TypeVar("R")


def offloaded(
    method: Callable[Concatenate[Memory, P], R],
) -> Callable[Concatenate[AsyncMemory, P], Coroutine[Any, Any, R]]:
    """``Memory.method`` as a coroutine method of ``AsyncMemory``, run in its thread pool."""
    name = method.__name__

    async def call(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        bound: Callable[P, R] = getattr(self.memory, name)
        return await self._offload(functools.partial(bound, *args, **kwargs))

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
        """Open the store as ``Memory(db, **options)`` does (this blocks once, while the store
        opens). ``max_workers``: the thread pool's size (default: ``store.parallelism()``)."""
        self.memory = Memory(db, **options)
        self.tenant = self.memory.tenant
        workers = max_workers or self.memory.store.parallelism()
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="memlineage")

    async def _offload(self, call: Callable[[], R]) -> R:
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    # -- raw layer --
    add = offloaded(Memory.add)
    add_messages = offloaded(Memory.add_messages)
    extract = offloaded(Memory.extract)
    revoke = offloaded(Memory.revoke)
    trust = offloaded(Memory.trust)
    conflict = offloaded(Memory.conflict)
    resolve = offloaded(Memory.resolve)
    dismiss = offloaded(Memory.dismiss)
    detect = offloaded(Memory.detect)
    erase = offloaded(Memory.erase)
    events = offloaded(Memory.events)
    # -- policies --
    policy = offloaded(Memory.policy)
    policy_history = offloaded(Memory.policy_history)
    set_temporal_policy = offloaded(Memory.set_temporal_policy)
    set_trust_policy = offloaded(Memory.set_trust_policy)
    # -- lineage and audit --
    lineage = offloaded(Memory.lineage)
    why = offloaded(Memory.why)
    audit = offloaded(Memory.audit)
    sweep = offloaded(Memory.sweep)
    # -- derived layer --
    consolidate = offloaded(Memory.consolidate)
    consolidate_many = offloaded(Memory.consolidate_many)
    generator = offloaded(Memory.generator)
    verify = offloaded(Memory.verify)
    artifacts = offloaded(Memory.artifacts)
    artifact = offloaded(Memory.artifact)
    subjects = offloaded(Memory.subjects)
    rank = offloaded(Memory.rank)
    has_subject = offloaded(Memory.has_subject)
    # -- release --
    release_mode = offloaded(Memory.release_mode)
    rollout = offloaded(Memory.rollout)
    configs = offloaded(Memory.configs)
    reviews = offloaded(Memory.reviews)
    review = offloaded(Memory.review)
    approve = offloaded(Memory.approve)
    reject = offloaded(Memory.reject)
    release_fail = offloaded(Memory.release_fail)
    # -- evaluation, keys, jobs --
    eval = offloaded(Memory.eval)
    eval_runs = offloaded(Memory.eval_runs)
    create_key = offloaded(Memory.create_key)
    list_keys = offloaded(Memory.list_keys)
    revoke_key = offloaded(Memory.revoke_key)
    queue = offloaded(Memory.queue)
    schedule = offloaded(Memory.schedule)
    jobs = offloaded(Memory.jobs)
    set_tail_threshold = offloaded(Memory.set_tail_threshold)
    work = offloaded(Memory.work)
    # -- embeddings --
    embed = offloaded(Memory.embed)

    recall = offloaded(Memory.recall)

    async def embedder(self) -> Embedder:
        """The embedder ``embed`` uses (made on first use: the default loads a model)."""
        return await self._offload(lambda: self.memory.embedder)

    async def tail_threshold(self) -> int:
        """``Memory.tail_threshold`` (a property there), awaited."""
        return await self._offload(lambda: self.memory.tail_threshold)

    # -- lifetime --

    async def close(self) -> None:
        """Close the store (if this object opened it) once running calls are done."""
        await self._offload(self.memory.close)
        self._pool.shutdown(wait=True)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
