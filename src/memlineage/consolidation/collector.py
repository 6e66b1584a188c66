"""The cyclic garbage collector, paused while a consolidation does its CPU work.

A build allocates hundreds of thousands of objects that live until it ends
(events, items, claims, statements) beside the per-process caches; each
collection of the oldest generation walks them all, and on a 20,000-event
subject they came to about a third of the CPU of an incremental run's
prepare (docs/benchmarks.md). A build makes little cyclic garbage, and what
it makes is collected once the pause ends; reference counting still frees
everything else at once, so memory is what it was.

The pause is process-wide, so it is kept short: only work bounded by the
subject's size is run under it (never a wait on a model), and only the block
that turned the collector off turns it back on. A block entered while it is
off (nested, another thread's, or a host that turned it off) changes nothing,
so no pause outlasts the block that started it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()


@contextmanager
def paused() -> Iterator[None]:
    """Run the block with the cyclic collector off (see the module's docstring)."""
    with _lock:
        owner = gc.isenabled()
        if owner:
            gc.disable()
    try:
        yield
    finally:
        if owner:
            gc.enable()
