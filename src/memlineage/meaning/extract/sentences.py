"""Sentences, clauses and the spans recognisers claim in them.

A ``Sentence`` answers every per-span question from structures built once, so
reading a sentence costs time linear in its length. Negations are marked here
because a sentence's clauses carry them and both clause kinds and value
polarity read them.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field

from memlineage.meaning.extract.patterns import (
    ABBREVIATION,
    CLAUSE,
    CLAUSE_HINTS,
    DIGIT,
    INTERJECTION_NO,
    ISO_DAY,
    LIMIT_IDIOMS,
    MAX_SENTENCE_CHARS,
    NEEDS_TO,
    NEG_IMPLICATIVE,
    NEGATORS,
    NO_HINT,
    NO_LONGER,
    OTHER_SPACE,
    SCOPE_DENIERS,
    SENTENCE,
    SENTENCE_START,
    STOPWORDS,
    TRIGGER_WORDS,
    WORD,
    folded,
    holds_any,
)
from memlineage.model import FactValue, lazy

#: an item found in a sentence: kind, key, value, unit, polarity, verbatim clause
Found = tuple[str, str, FactValue, str | None, bool, str]
#: a word (WORD) of a sentence: start, end, as written, case-folded with straight apostrophes
Token = tuple[int, int, str, str]


@dataclass
class Span:
    start: int
    end: int
    kind: str
    value: FactValue
    unit: str | None = None
    subtype: str = ""
    noun: str = ""


@dataclass(eq=False)
class Sentence:
    """A sentence and the non-overlapping spans recognisers have claimed.

    Every per-span question (is this range free, what comes before this value)
    is answered from structures built once per sentence, so reading a sentence
    costs time linear in its length however many values it holds.
    """

    text: str
    spans: list[Span] = field(default_factory=list)
    claimed: bytearray = field(init=False)
    # read by every recogniser's gate, so computed at once
    folded: str = field(init=False)  # the text as literal gates read it (patterns.folded)
    #: every number, amount, account and all but a few dates and ids need a digit
    has_digit: bool = field(init=False)
    # ISO-day date spans by their end offset: a time right after one joins it
    day_ends: dict[int, Span] = field(default_factory=dict)
    starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.claimed = bytearray(len(self.text))
        self.folded = folded(self.text)
        self.has_digit = DIGIT.search(self.text) is not None

    def free(self, start: int, end: int) -> bool:
        return self.claimed.find(1, start, end) == -1

    def claim(self, start: int, end: int) -> None:
        self.claimed[start:end] = b"\x01" * (end - start)

    def take(self, span: Span) -> bool:
        if not self.free(span.start, span.end):
            return False
        self.claim(span.start, span.end)
        self.spans.append(span)
        if span.kind == "date" and isinstance(span.value, str) and ISO_DAY.fullmatch(span.value):
            self.day_ends[span.end] = span
        return True

    def finish(self) -> None:
        """Sort the spans once every recogniser has run."""
        self.spans.sort(key=lambda s: s.start)
        self.starts = [s.start for s in self.spans]

    @lazy
    def clauses(self) -> list[tuple[int, int]]:
        return _clauses(self.text, self.folded)

    def clause_of(self, offset: int) -> tuple[int, int]:
        clauses = self.clauses
        at = bisect.bisect_right(clauses, (offset, len(self.text) + 1)) - 1
        return clauses[at] if at >= 0 else (0, len(self.text))

    @lazy
    def tokens(self) -> list[Token]:
        """The sentence's words, read once for all its clauses."""
        text = self.text
        low = text.casefold().replace("’", "'")
        if len(low) != len(text):  # 'ß' -> 'ss': offsets differ, fold word by word
            return [
                (m.start(), m.end(), m.group(), m.group().casefold().replace("’", "'"))
                for m in WORD.finditer(text)
            ]
        # casefold() maps each character on its own, so with no character folded
        # into several the folded words stand at the same offsets
        spans = [m.span() for m in WORD.finditer(text)]
        return [(a, b, text[a:b], low[a:b]) for a, b in spans]

    @lazy
    def token_starts(self) -> list[int]:
        return [t[0] for t in self.tokens]

    @lazy
    def words(self) -> tuple[list[str], list[str]]:
        """The sentence's words as written and case-folded (apostrophes straight): the
        tokens without their offsets, which most sentences never need."""
        raw = WORD.findall(self.text)
        return raw, [w.casefold().replace("’", "'") for w in raw]

    def words_in(self, start: int, end: int) -> tuple[list[str], list[str]]:
        """A clause's words as written and case-folded (see ``tokens_in``)."""
        if start == 0 and end == len(self.text):
            return self.words
        tokens = self.tokens_in(start, end)
        return [t[2] for t in tokens], [t[3] for t in tokens]

    def tokens_in(self, start: int, end: int) -> list[Token]:
        """The words of a clause: exactly those WORD finds in ``text[start:end]``, since a
        clause begins after and ends before whitespace, ';' or ',', which no word holds."""
        if start == 0 and end == len(self.text):
            return self.tokens  # the whole sentence (most are one clause): no copy
        starts = self.token_starts
        return self.tokens[bisect.bisect_left(starts, start) : bisect.bisect_left(starts, end)]

    @lazy
    def verbatim_clauses(self) -> dict[int, str]:
        """Per clause start: the clause as written (whitespace collapsed), built once."""
        return {start: verbatim(self.text[start:end]) for start, end in self.clauses}

    def verbatim_clause_of(self, offset: int) -> str:
        start, end = self.clause_of(offset)
        found = self.verbatim_clauses.get(start)
        return found if found is not None else verbatim(self.text[start:end])

    def spans_in(self, start: int, end: int) -> list[Span]:
        return self.spans[
            bisect.bisect_left(self.starts, start) : bisect.bisect_left(self.starts, end)
        ]

    def spans_between(self, start: int, end: int) -> int:
        """How many spans start in [start, end)."""
        return bisect.bisect_left(self.starts, end) - bisect.bisect_left(self.starts, start)

    @lazy
    def anchor_words(self) -> tuple[list[int], list[str]]:
        """Start offsets and words that may name what a value is *of*, in one pass.

        Free (unclaimed) words that are neither stop words, digits nor trigger words.
        """
        starts: list[int] = []
        words: list[str] = []
        for match in WORD.finditer(self.text):
            word = match.group().casefold()
            if word in STOPWORDS or word in TRIGGER_WORDS or word.isdigit():
                continue
            if self.free(match.start(), match.end()):
                starts.append(match.start())
                words.append(word)
        return starts, words

    @lazy
    def negation_marks(self) -> dict[int, list[int]]:
        """Per clause start: end offsets of each negation in that clause (one pass)."""
        maybe_no = NO_HINT in self.folded
        # Without 'no' no idiom is masked, so a clause none of whose words may negate
        # has no mark: its offsets are never read.
        maybe_nt = "n't" in self.folded or "n’t" in self.folded
        marks: dict[int, list[int]] = {}
        for start, end in self.clauses:
            if maybe_no or maybe_nt or not _NEGATION_WORDS.isdisjoint(self.words_in(start, end)[1]):
                marks[start] = _negation_marks(
                    self.text, start, end, self.tokens_in(start, end), maybe_no
                )
            else:
                marks[start] = []
        return marks

    @lazy
    def denial_marks(self) -> dict[int, list[int]]:
        """Per clause start: end offsets of negations and deny verbs ('revoke')."""
        marks: dict[int, list[int]] = {}
        for start, end in self.clauses:
            found = list(self.negation_marks[start])
            for match in WORD.finditer(self.text, start, end):
                if match.group().casefold() in SCOPE_DENIERS:
                    found.append(match.end())
            marks[start] = sorted(found)
        return marks


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of a text, surrounding whitespace excluded.

    ``text[start:end]`` is exactly each string :func:`split_sentences` returns, so a
    caller can keep a sentence verbatim and know where it stands. A sentence longer
    than ``MAX_SENTENCE_CHARS`` comes as several windows (see :func:`sentence_windows`).
    """
    return [(start, end) for start, end, _, _ in sentence_windows(text)]


#: texts whose sentence windows are remembered: a detection run splits each event's
#: text twice (its items, then whether it binds); bounded like the other caches
WINDOWS_CACHE_SIZE = 1 << 13


def sentence_windows(text: str) -> list[tuple[int, int, bool, bool]]:
    """(start, end, cut before, cut after) per sentence. A sentence too long to read whole
    comes as windows cut at whitespace, so what is extracted from it stays bounded; the
    flags say on which side a window was cut out of its sentence."""
    return list(cached_windows(text))


@functools.lru_cache(maxsize=WINDOWS_CACHE_SIZE)
def cached_windows(text: str) -> tuple[tuple[int, int, bool, bool], ...]:
    return tuple(_sentence_windows(text))


def _sentence_windows(text: str) -> list[tuple[int, int, bool, bool]]:
    found: list[tuple[int, int, bool, bool]] = []
    for start, end in _sentences(text):
        if end - start <= MAX_SENTENCE_CHARS:
            found.append((start, end, False, False))
            continue
        pieces = _windows(text, start, end)
        last = len(pieces) - 1
        found.extend((a, b, n > 0, n < last) for n, (a, b) in enumerate(pieces))
    return found


def _sentences(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = 0
    for match in [*(m for m in SENTENCE.finditer(text) if _ends_sentence(text, m)), None]:
        end = len(text) if match is None else match.start()
        while start < end and text[start].isspace():
            start += 1
        stop = end
        while stop > start and text[stop - 1].isspace():
            stop -= 1
        if stop > start:
            spans.append((start, stop))
        if match is not None:
            start = match.end()
    return spans


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    """A newline ends a sentence; . ! ? and whitespace do unless they close an abbreviation,
    an initial or an ellipsis. A lower-case word after them still starts a new sentence:
    "tea. eur budget" is two, so no text is one sentence for lack of capitals."""
    if "\n" in match.group():
        return True
    if ABBREVIATION.search(text, max(0, match.start() - 8), match.start()):
        return False
    following = text[match.end()]
    return following.islower() or SENTENCE_START.match(following) is not None


def _windows(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """``text[start:end]`` in pieces of at most MAX_SENTENCE_CHARS, cut at whitespace."""
    pieces: list[tuple[int, int]] = []
    while end - start > MAX_SENTENCE_CHARS:
        cut = text.rfind(" ", start + 1, start + MAX_SENTENCE_CHARS + 1)
        cut = cut if cut > start else start + MAX_SENTENCE_CHARS  # one long word
        pieces.append((start, cut))
        start = cut
        while start < end and text[start].isspace():
            start += 1
    if end > start:
        pieces.append((start, end))
    return pieces


def split_sentences(text: str) -> list[str]:
    """The sentences of a text: after . ! ? and whitespace (not after an abbreviation,
    an initial or an ellipsis), and at every newline; each stripped."""
    return [text[start:end] for start, end in sentence_spans(text)]


def _clauses(text: str, folded_text: str) -> list[tuple[int, int]]:
    bounds: list[tuple[int, int]] = []
    start = 0
    for match in CLAUSE.finditer(text) if _may_split(text, folded_text) else ():
        bounds.append((start, match.start()))
        start = match.end()
    bounds.append((start, len(text)))
    return [(a, b) for a, b in bounds if text[a:b].strip()]


def _may_split(text: str, folded_text: str) -> bool:
    """Whether CLAUSE may match: most sentences hold none of its splits (see CLAUSE_HINTS)."""
    return (
        ";" in text or OTHER_SPACE.search(text) is not None or holds_any(folded_text, CLAUSE_HINTS)
    )


def _negation_marks(
    text: str, start: int, end: int, tokens: list[Token], maybe_no: bool = True
) -> list[int]:
    """End offsets of the negations in ``text[start:end]`` (whose words are ``tokens``),
    in order; ``maybe_no``: False when the sentence holds no 'no' (NO_HINT).

    Limit idioms ('no more than'), 'not only', 'no matter' and an opening 'No,'
    are not negations; 'no longer' and 'not anymore' count once.
    """
    masked: list[tuple[int, int]] = []
    marks: list[int] = []
    if maybe_no:  # else none of the three can match
        masked = [(m.start(), m.end()) for m in LIMIT_IDIOMS.finditer(text, start, end)]
        for m in NO_LONGER.finditer(text, start, end):
            masked.append((m.start(), m.end()))
            marks.append(m.end())
        interjection = INTERJECTION_NO.match(text, start, end)
        if interjection:
            masked.append((interjection.start(), interjection.end()))
        masked.sort()
    words = [t for t in tokens if not _inside(masked, t[0])] if masked else tokens
    for i, (_, stop, _, word) in enumerate(words):
        if (word in _NEGATION_WORDS or word.endswith("n't")) and _is_negation(word, words, i):
            marks.append(stop)
    return sorted(marks)


#: every word _is_negation may take, but those ending in "n't" (the set spares a call a word)
_NEGATION_WORDS = NEGATORS | NEG_IMPLICATIVE


def _is_negation(word: str, words: list[Token], i: int) -> bool:
    if word in NEGATORS or word.endswith("n't"):
        return True
    if word not in NEG_IMPLICATIVE:
        return False
    # 'fails to reply' negates 'reply'; 'the request failed' negates nothing
    return word not in NEEDS_TO or (i + 1 < len(words) and words[i + 1][3] == "to")


def _inside(intervals: list[tuple[int, int]], offset: int) -> bool:
    at = bisect.bisect_right(intervals, (offset, 1 << 62)) - 1
    return at >= 0 and intervals[at][0] <= offset < intervals[at][1]


def verbatim(text: str) -> str:
    """A clause as written: original case and punctuation, whitespace collapsed."""
    return " ".join(text.split())
