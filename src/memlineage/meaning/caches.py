"""Every per-process cache that may hold a copy of stored text, emptied in one call.

Extraction, binding, rendering, token counts, parsed summaries and the gate
remember what they read per process (pure caches of pure functions, bounded).
An erasure must not leave the erased text in them: the erasing process empties
them all after its commit (docs/concepts.md, "Erasure"). Each module above this
one registers its caches here, so this module knows none of them but the
tokenizer's, which sits below it.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

from memlineage import tokens

_CLEARS: list[Callable[[], None]] = []


def register(clear: Callable[[], None]) -> None:
    """Have :func:`clear_all` call ``clear`` too."""
    _CLEARS.append(clear)


def clear_all() -> None:
    """Forget everything remembered per process: what a new process starts with."""
    for clear in _CLEARS:
        clear()
    tokens.forget_counts()  # budget counts, keyed by the lines they counted
    re.purge()  # compiled patterns of erased words (store/scrub.py) are cached by text


K = TypeVar("K")
V = TypeVar("V")


class LastPerKey(Generic[K, V]):
    """The last value kept per key (a subject's last read, selection or build), per
    process: the least recently kept go first once their sizes add up past
    ``limit`` (the newest always stays). Registered: :func:`clear_all` empties it
    (``registered=False``: its owner empties it, one kept per store object)."""

    def __init__(self, size: Callable[[V], int], limit: int, *, registered: bool = True) -> None:
        self._size = size
        self._limit = limit
        self._values: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()  # a server works on several threads
        if registered:
            register(self.clear)

    def take(self, key: K) -> V | None:
        """The value, taken out while the caller extends it: no other thread does too."""
        with self._lock:
            return self._values.pop(key, None)

    def keep(self, key: K, value: V) -> None:
        with self._lock:
            self._values[key] = value
            self._values.move_to_end(key)
            total = sum(self._size(v) for v in self._values.values())
            while len(self._values) > 1 and total > self._limit:
                _, dropped = self._values.popitem(last=False)
                total -= self._size(dropped)

    def get(self, key: K) -> V | None:
        with self._lock:
            return self._values.get(key)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


A = TypeVar("A")


class ByIdentity(Generic[A, V]):
    """``derive(arg)`` remembered for the last ``kept`` arguments, found by identity.

    For what a run derives from a large immutable value that the next run is handed
    again as the very same object (a subject's unresolved conflicts while no operation
    was recorded): the derivation then costs nothing, where a cache by equality would
    hash or compare the whole value. Only tuples are remembered (a list could change
    under its id); the argument is held, so its id is never reused while it is
    remembered. Registered: :func:`clear_all` empties it."""

    def __init__(self, derive: Callable[[A], V], kept: int = 4) -> None:
        self._derive = derive
        self._kept = kept
        self._values: list[tuple[A, V]] = []
        self._lock = threading.Lock()
        register(self.clear)

    def __call__(self, arg: A) -> V:
        if type(arg) is not tuple:
            return self._derive(arg)
        with self._lock:
            for held, value in self._values:
                if held is arg:
                    return value
        value = self._derive(arg)
        with self._lock:
            self._values = [(arg, value), *self._values[: self._kept - 1]]
        return value

    def clear(self) -> None:
        with self._lock:
            self._values = []
