"""Relevance of passages to a query: BM25 over the recall's own candidates. Pure.

Why not the engine's ranking (FTS5 ``bm25()``, PostgreSQL ``ts_rank_cd``):
``bm25()`` weighs each query term by its document frequency over the whole
table, which FTS5 finds by reading every posting of the term: over 1,000,000
events it took a p50 of 6.5 ms and a p99 of 33 ms where the bare match took
0.3 ms (docs/recall.md). It also weighs a term by how common it is in *other*
subjects, and the two backends ranked differently. Here the collection is what
the recall itself returns from: every candidate passage of every subject
recalled, plus the cold events the query did not match (they count as
documents without any query term). So the cost follows the subject, not the
table, and SQLite and PostgreSQL rank identically.

Words are stemmed with the Snowball English stemmer (PyStemmer, the C build of
the same algorithm PostgreSQL's ``'english'`` configuration uses), so a query
for "painting" finds "paints". Scores are Okapi BM25 with the usual k1 = 1.2,
b = 0.75 and the always-positive IDF ``ln(1 + (N - n + 0.5) / (n + 0.5))``.

A passage of someone the query names (its subject or its speaker) weighs
NAMED_WEIGHT times its relevance (:func:`named`): "what did Sam say" is about
Sam's memory more than about the lines of others that mention Sam.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

import Stemmer

from memlineage.meaning import caches

K1 = 1.2
B = 0.75

_WORD = re.compile(r"[^\W_]+")


# word -> stem. A plain dict: a lookup costs a tenth of a call into the stemmer,
# and a recall reads every word of every candidate. Bounded by clearing.
_STEMS: dict[str, str] = {}
_STEMS_MAX = 200_000


@functools.lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


def stem(word: str) -> str:
    """The Snowball English stem of a lower-cased word."""
    found = _STEMS.get(word)
    if found is None:
        if len(_STEMS) >= _STEMS_MAX:
            _STEMS.clear()
        found = _STEMS[word] = _stemmer().stemWord(word)
    return found


# Snowball's irregular short words: "dying" -> "die" keeps neither "die" nor "di".
_IRREGULAR = {"die": ("di", "dy"), "lie": ("li", "ly"), "tie": ("ti", "ty")}


def _prefixes(stem_: str) -> tuple[str, ...]:
    """Substrings one of which every word with this stem contains.

    Snowball rewrites only endings: the first three letters of a longer stem
    survive; a short stem survives less a final "e" ("use" <- "using") or an
    "i" that stands for "y" ("cri" <- "cry"); and three irregular words.
    """
    if len(stem_) > 3:
        return (stem_[:3],)
    if stem_ in _IRREGULAR:
        return _IRREGULAR[stem_]
    return (stem_[:-1] if len(stem_) > 1 and stem_[-1] in "ei" else stem_,)


def document(text: str, wanted: frozenset[str], prefixes: Sequence[str]) -> dict[str, int]:
    """How often each ``wanted`` stem occurs in ``text``.

    Only a text that contains one of the stems' ``prefixes`` (prefixes_of) is
    split into words and stemmed: most candidates of a recall share no word
    with the query.
    """
    lowered = text.lower()
    for prefix in prefixes:
        if prefix in lowered:
            break
    else:
        return {}
    counts: dict[str, int] = {}
    for word in _WORD.findall(lowered):
        s = _STEMS.get(word) or stem(word)
        if s in wanted:
            counts[s] = counts.get(s, 0) + 1
    return counts


def prefixes_of(wanted: frozenset[str]) -> tuple[str, ...]:
    """The substrings one of which a text holds when it holds a word of these stems,
    once each. Plain substring tests: compiling one pattern of them per query
    cost more than every test of a recall (a query is seldom seen twice)."""
    return tuple(sorted({p for s in wanted for p in _prefixes(s)}))


def length(text: str) -> int:
    """A text's length in words, as BM25 normalises by it: its spaces plus one
    (the same rule for every candidate, at a fraction of a tokenizer's cost)."""
    return text.count(" ") + 1


def bm25(terms: Sequence[str], texts: Sequence[str], unmatched: int = 0) -> list[float]:
    """The BM25 score of each text for the query ``terms`` (0.0: no term occurs).

    ``unmatched`` documents of the collection are not in ``texts`` because they
    contain none of the terms (cold events the index did not return): they
    count in N and in no term's document frequency. Their length is taken as
    the average of the others'.
    """
    wanted = frozenset(stem(t) for t in terms)
    if not wanted or not texts:
        return [0.0] * len(texts)
    prefixes = prefixes_of(wanted)
    docs = [(length(text), document(text, wanted, prefixes)) for text in texts]
    average = sum(n for n, _ in docs) / len(docs)
    total = len(docs) + unmatched
    frequency: dict[str, int] = {}
    for _, counts in docs:
        for term in counts:
            frequency[term] = frequency.get(term, 0) + 1
    idf = {s: math.log(1 + (total - n + 0.5) / (n + 0.5)) for s, n in frequency.items()}
    scores = []
    for words, counts in docs:
        norm = K1 * (1 - B + B * words / average)
        scores.append(sum((idf[s] * c * (K1 + 1) / (c + norm) for s, c in counts.items()), 0.0))
    return scores


# How much more a passage of someone the query names weighs. Measured on LoCoMo
# (docs/recall.md, "Whose memory a question asks about"): 1.3, 1.5 and 2.0 all
# raised evidence recall at every budget on both views; 1.5 was best or within
# 0.003. It only reorders passages of different people: when the query names the
# subject of every candidate (a recall of one subject), all weigh the same.
NAMED_WEIGHT = 1.5


@functools.lru_cache(maxsize=4096)
def names_of(subject: str, speaker: str | None) -> frozenset[str]:
    """The words that name whose a passage is: its subject id's and its speaker's."""
    return frozenset(_WORD.findall(f"{subject} {speaker or ''}".lower()))


caches.register(names_of.cache_clear)


def named(
    terms: Sequence[str], owners: Sequence[tuple[str, str | None]], scores: Sequence[float]
) -> list[float]:
    """``scores`` with those of passages whose (subject, speaker) the query ``terms``
    name weighed NAMED_WEIGHT times."""
    asked = frozenset(terms)
    return [
        score * NAMED_WEIGHT if score and asked & names_of(*owner) else score
        for owner, score in zip(owners, scores, strict=True)
    ]
