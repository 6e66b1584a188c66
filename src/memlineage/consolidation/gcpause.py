"""The cyclic garbage collector paused while a call builds large acyclic object graphs.

A consolidation builds hundreds of thousands of small objects (events, items,
claims, statements, parsed JSON) that are freed by reference counting: they
hold no cycles. CPython's cyclic collector still walks the whole heap each time
its oldest generation fills, and the per-process caches (parsed outputs,
extracted items) make that heap large: on a 20,000-event subject the collector
was a third of a consolidation's CPU time, and found nothing to collect
(docs/benchmarks.md, "The garbage collector"). ``gc.freeze`` only helps with
objects that already exist; the standard library has no scoped pause, so this
module keeps one.

The pause is process-wide (the collector is), so it is counted: threads that
consolidate at once share one pause, and the collector is enabled again when
the last of them leaves, unless it was disabled before the first came in. A
cycle made during a pause is collected after it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector is off inside; reference counting frees as always."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def pauses_collector(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` runs with the cyclic collector paused (``collector_paused``)."""

    @wraps(fn)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        with collector_paused():
            return fn(*args, **kwargs)

    return paused
