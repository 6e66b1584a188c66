"""Erasure for data-protection requests: what to remove from derived rows. Pure.

An erased event keeps its id, seq and hash (so every manifest's inputRoot still
verifies) but loses its text and facts to a tombstone. Every derived row that
copied its content loses it too: claims and statements that derive from it are
dropped from stored outputs, and any remaining copy of its text, its sentences,
its clauses or its explicit fact values (case-insensitively: extraction
casefolds clauses) is replaced by the tombstone wherever a string holds it.

Derived rows also hold pieces no sentence match finds: keys slugged from the
text (``share-kilimanjaroflute-password-anyone``), an error that quotes a few
words, a reason quoting one. So the words of the erased text that no other
event of the subject uses are scrubbed as whole words too: such a word can only
have come from the erased event, so removing it loses nothing another event said.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from memlineage.meaning import extract
from memlineage.model import Event

TOMBSTONE = "[erased]"
# Shorter copies are too common to scrub blindly ("5", "yes"); they are removed with the
# claims and statements that derive from the event instead.
MIN_NEEDLE = 4


def needles(event: Event) -> list[str]:
    """Every piece of the event's content a derived row may have copied, longest first."""
    found = {event.text, *extract.split_sentences(event.text)}
    for item in extract.event_items(event):
        if isinstance(item.value, str):
            found.add(item.value)
        if item.clause:
            found.add(item.clause)
    for fact in event.facts:
        found.add(str(fact.value))
    kept = {n.strip() for n in found if len(n.strip()) >= MIN_NEEDLE}
    return sorted(kept, key=lambda n: (-len(n), n))


_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> set[str]:
    """The casefolded words (runs of letters and digits) of a text."""
    return {w.casefold() for w in _WORD.findall(text)}


def own_words(text: str, others: Iterable[str]) -> list[str]:
    """The words of ``text`` (at least MIN_NEEDLE long) that none of ``others`` uses."""
    used: set[str] = set()
    for other in others:
        used |= words(other)
    return sorted(w for w in words(text) - used if len(w) >= MIN_NEEDLE)


def pattern(pieces: Iterable[str], whole_words: Iterable[str] = ()) -> re.Pattern[str] | None:
    """One case-insensitive alternation of the pieces, longest first, then of the whole
    words (not inside a longer word: ``code`` never matches in ``codes``)."""
    ordered = sorted(set(pieces), key=lambda n: (-len(n), n))
    alternatives = [re.escape(p) for p in ordered]
    bounded = sorted(set(whole_words), key=lambda n: (-len(n), n))
    if bounded:
        joined = "|".join(re.escape(w) for w in bounded)
        alternatives.append(f"(?<![^\\W_])(?:{joined})(?![^\\W_])")
    if not alternatives:
        return None
    return re.compile("|".join(alternatives), re.IGNORECASE)


def scrub(value: Any, found: re.Pattern[str] | None) -> Any:
    """``value`` (JSON) with every matching piece of every string replaced by the tombstone."""
    if found is None:
        return value
    if isinstance(value, str):
        return found.sub(TOMBSTONE, value)
    if isinstance(value, list):
        return [scrub(v, found) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v, found) for k, v in value.items()}
    return value


def scrub_output(output: dict[str, Any], event_id: str, found: re.Pattern[str] | None) -> Any:
    """A stored output without what derives from ``event_id`` and without copies of it."""
    cleaned = dict(output)
    for name in ("claims", "statements"):
        if isinstance(cleaned.get(name), list):
            cleaned[name] = [
                entry for entry in cleaned[name] if event_id not in (entry.get("derivedFrom") or ())
            ]
    for name in ("cold", "openItems"):
        if isinstance(cleaned.get(name), list):
            cleaned[name] = [entry for entry in cleaned[name] if entry != event_id]
    return scrub(cleaned, found)
