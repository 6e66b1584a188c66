"""Every per-process cache that may hold a copy of stored text, emptied in one call.

Extraction, binding, rendering, token counts, parsed summaries and the gate
remember what they read per process (pure caches of pure functions, bounded).
An erasure must not leave the erased text in them: the erasing process empties
them all after its commit (docs/concepts.md, "Erasure"). Each module above this
one registers its caches here, so this module knows none of them but the
tokenizer's, which sits below it.
"""

from __future__ import annotations

import operator
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
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
    (``registered=False``: its owner empties it, one kept per store object).

    A value's size is taken once, when it is kept: values are immutable. The total
    is kept up to date, so keeping a value costs the same beside ten subjects as
    beside ten thousand."""

    def __init__(self, size: Callable[[V], int], limit: int, *, registered: bool = True) -> None:
        self._size = size
        self._limit = limit
        self._values: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()  # a server works on several threads
        if registered:
            register(self.clear)

    def take(self, key: K) -> V | None:
        """The value, taken out while the caller extends it: no other thread does too."""
        with self._lock:
            found = self._values.pop(key, None)
            if found is None:
                return None
            self._total -= found[1]
            return found[0]

    def keep(self, key: K, value: V) -> None:
        size = max(1, self._size(value))  # so that empty values too are bounded in number
        with self._lock:
            replaced = self._values.pop(key, None)
            if replaced is not None:
                self._total -= replaced[1]
            self._values[key] = (value, size)
            self._total += size
            while len(self._values) > 1 and self._total > self._limit:
                _, (_, dropped) = self._values.popitem(last=False)
                self._total -= dropped

    def get(self, key: K) -> V | None:
        with self._lock:
            found = self._values.get(key)
            return found[0] if found is not None else None

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._total = 0


T = TypeVar("T")


class ByIdentity(Generic[T, V]):
    """``derive(entries)`` remembered for the last ``kept`` tuples, found by identity.

    For what a run derives from a large immutable tuple that the next run is handed
    again as the very same object (a subject's unresolved conflicts while no operation
    was recorded): the derivation then costs nothing, where a cache by equality would
    hash or compare the whole value. With ``extend``, a tuple that starts with the very
    entries of a remembered one (the same conflicts and a few recorded since) is derived
    as ``extend(what the remembered one gave, the entries after them)``, which must
    equal ``derive`` of the whole tuple and leave the remembered value as it was.

    Only tuples are remembered (a list could change under its id); a tuple is held, so
    its id is never reused while it is remembered. Registered: :func:`clear_all`
    empties it."""

    def __init__(
        self,
        derive: Callable[[Sequence[T]], V],
        extend: Callable[[V, Sequence[T]], V] | None = None,
        kept: int = 4,
    ) -> None:
        self._derive = derive
        self._extend = extend
        self._kept = kept
        self._values: list[tuple[tuple[T, ...], V]] = []
        self._lock = threading.Lock()
        register(self.clear)

    def __call__(self, entries: Sequence[T]) -> V:
        if type(entries) is not tuple:
            return self._derive(entries)
        with self._lock:
            remembered = list(self._values)
        value = self._remembered(entries, remembered)
        with self._lock:
            others = [kept for kept in self._values if kept[0] is not entries]
            self._values = [(entries, value), *others[: self._kept - 1]]
        return value

    def _remembered(self, entries: tuple[T, ...], remembered: list[tuple[tuple[T, ...], V]]) -> V:
        for held, value in remembered:
            if held is entries:
                return value
        if self._extend is not None:
            for held, value in remembered:
                count = len(held)
                if 0 < count < len(entries) and all(map(operator.is_, held, entries)):
                    return self._extend(value, entries[count:])
        return self._derive(entries)

    def clear(self) -> None:
        with self._lock:
            self._values = []
