"""The store's synchronous transactions over an asynchronous driver, without a thread each.

Every transaction of memlineage is a synchronous function, shared by both
backends and by every interface. psycopg's async connections need ``await``.
Rewriting each transaction as a coroutine would double the store; instead the
synchronous code runs inside a greenlet that pauses at each database call
(:func:`await_`) while the event loop awaits the driver, and resumes with its
result. This is the technique SQLAlchemy's asyncio extension uses; no
maintained library offers it on its own (SQLAlchemy's helpers are internal),
so the two small functions are written here.

Code that must not hold the event loop (a consolidation's CPU work) runs in a
thread instead: there :func:`await_` hands each database call to the loop and
the thread waits for it, so both paths share one async pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import Any, TypeVar

import greenlet

T = TypeVar("T")


class _Bridged(greenlet.greenlet):
    """A greenlet running synchronous store code for a coroutine (see run_bridged)."""


def await_(awaitable: Awaitable[T], loop: asyncio.AbstractEventLoop) -> T:
    """The result of ``awaitable`` on ``loop``, from synchronous code.

    Inside run_bridged the greenlet pauses and the coroutine awaits it; in any
    other thread (a consolidation run off the loop, a worker's heartbeat) the
    thread hands it to the loop and waits.
    """
    current = greenlet.getcurrent()
    if isinstance(current, _Bridged) and current.parent is not None:
        result: T = current.parent.switch(awaitable)  # the coroutine awaits it, then resumes us
        return result
    if _running_here(loop):
        raise RuntimeError("an asynchronous store is called on its event loop: use AsyncMemory")
    return asyncio.run_coroutine_threadsafe(_awaited(awaitable), loop).result()


def _running_here(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def run_bridged(call: Callable[[], T]) -> T:
    """Run ``call`` on this event loop's thread; each await_ inside it is awaited here."""
    bridged = _Bridged(call)
    step: Any = bridged.switch()
    while not bridged.dead:
        try:
            value = await step
        except BaseException as exc:  # the driver's error, raised where the call awaited
            step = bridged.throw(exc)
        else:
            step = bridged.switch(value)
    return step  # type: ignore[no-any-return]


@contextmanager
def entered(
    manager: AbstractAsyncContextManager[T], loop: asyncio.AbstractEventLoop
) -> Iterator[T]:
    """An async context manager used from synchronous code (``with entered(m, loop) as x``)."""
    value = await_(manager.__aenter__(), loop)
    try:
        yield value
    except BaseException as exc:
        if not await_(manager.__aexit__(type(exc), exc, exc.__traceback__), loop):
            raise
    else:
        await_(manager.__aexit__(None, None, None), loop)


__all__ = ["await_", "entered", "run_bridged"]
