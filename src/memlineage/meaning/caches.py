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
from collections.abc import Callable

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
