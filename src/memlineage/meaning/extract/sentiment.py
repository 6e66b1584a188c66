"""Preferences from a sentiment lexicon: the attitude predicate of a clause.

'I detest olives', "I can't stand noise", "I'm allergic to shellfish": the
predicate's valence in the VADER lexicon gives the preference's polarity.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING

from memlineage.meaning.extract.patterns import (
    BE,
    DEGREE,
    NOT_ATTITUDES,
    PAST_FORMS,
    PLAIN_SUBJECTS,
    POSSESSIVES,
    PRE_VERB,
    STOPWORDS,
    SUBJECT_BE,
    SUBJECTS,
)

if TYPE_CHECKING:
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

# attitude verbs the VADER lexicon lacks (checked: no entry for them or their inflections)
_LEXICON_SUPPLEMENT: dict[str, float] = {"detest": -2.5}
_MIN_VALENCE = 1.0


@dataclass(frozen=True)
class Predicate:
    """An attitude predicate ('detest', "can't stand", 'allergic to') and its valence."""

    valence: float
    words: frozenset[str]  # the predicate's words, left out of the item's key
    absorbed: int = 0  # negations that belong to the predicate ("can't stand")


@functools.cache
def sentiment_lexicon() -> dict[str, float]:
    """The VADER lexicon (word -> mean valence, -4..4), read once per process.

    Read from the file the ``vaderSentiment`` package ships (offline); the
    package's analyser itself is not used: only the sign of a predicate is needed.
    """
    text = files("vaderSentiment").joinpath("vader_lexicon.txt").read_text(encoding="utf-8")
    lexicon: dict[str, float] = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) >= 2:
            try:
                lexicon[fields[0].strip()] = float(fields[1])
            except ValueError:
                continue
    return lexicon


@functools.cache
def vader() -> SentimentIntensityAnalyzer:
    """VADER's analyser, imported and loaded (its lexicon) on the first clause that needs
    a stance: a process that never compares clauses never pays for it."""
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


#: clause values whose VADER score is remembered: short clauses ('i love it') recur
STANCE_CACHE_SIZE = 1 << 14


@functools.lru_cache(maxsize=STANCE_CACHE_SIZE)
def stance_score(clause: str) -> float:
    """VADER's compound score of a clause (-1..1), computed once per distinct text."""
    if _no_valence(clause):
        return 0.0
    return float(vader().polarity_scores(clause)["compound"])


def _no_valence(text: str) -> bool:
    """Whether VADER's score of ``text`` is 0 without running it: only a word in its
    lexicon has a valence (its other rules scale valences: boosters, negations, 'but',
    capitals, punctuation), and only a non-ASCII character can be an emoji it reads
    as words. Its words are as it splits them: at whitespace, then punctuation stripped
    unless that leaves two characters or fewer."""
    if not text.isascii():
        return False
    lexicon = vader().lexicon
    for token in text.split():
        stripped = token.strip(string.punctuation)
        word = token if len(stripped) <= 2 else stripped
        if word.lower() in lexicon:
            return False
    return True


def _valence(word: str) -> float | None:
    """The valence of an attitude verb or adjective, its 3rd-person form included."""
    if word in PAST_FORMS or word.endswith(("ed", "ing")):
        return None
    forms = list(_base_forms(word))
    if any(form in NOT_ATTITUDES for form in forms):
        return None
    lexicon = sentiment_lexicon()
    for form in forms:
        valence = _LEXICON_SUPPLEMENT.get(form, lexicon.get(form))
        if valence is not None:
            return valence if abs(valence) >= _MIN_VALENCE else None
    return None


def _base_forms(word: str) -> Iterator[str]:
    """The word, then the verbs it may be the 3rd person of ('adores' -> 'adore')."""
    yield word
    if len(word) < 5 or not word.endswith("s") or word.endswith("ss"):
        return
    if word.endswith("ies"):
        yield word[:-3] + "y"
    if word.endswith("es"):
        yield word[:-2]
    yield word[:-1]


def attitude(raw: Sequence[str], words: Sequence[str]) -> Predicate | None:
    """The attitude predicate of a clause (its words), if its subject holds one.

    'I detest olives', 'Sam loves jazz', 'My wife hates cilantro', "I can't stand
    noise", "I'm allergic to shellfish", 'We are fond of hiking': the word after a
    subject (a pronoun, a capitalised name, 'my wife', …), past optional adverbs,
    looked up in the lexicon; or an adjective after a form of 'be' followed by
    'of'/'to'. Past forms ('I lost my keys') and words that are not attitudes
    ('I hurt my knee') are skipped.
    """
    for i in _subject_positions(raw, words):
        word = words[i]
        subject_be = word in SUBJECT_BE
        j = i + 1
        while j < len(words) and words[j] in PRE_VERB:
            j += 1
        if j >= len(words):
            return None
        if subject_be or words[j] in BE:
            found = _adjective(words, j if subject_be else j + 1)
        elif word in PLAIN_SUBJECTS or _third_person(words[j]):
            # 'Sam loves', 'my wife hates': a singular subject's verb ends in -s, which
            # keeps imperatives ('Call support') and nouns ('Our team has') out
            found = _verb(words, j)
        else:
            found = None
        if found is not None:
            return found
    return None


_SUBJECT_WORDS = SUBJECTS | SUBJECT_BE


def _subject_positions(raw: Sequence[str], words: Sequence[str]) -> list[int]:
    """Where a subject stands, in order: a pronoun or "I'm" anywhere, a name or
    'my wife' only first (the set lookup spares a call per word)."""
    found = [i for i, word in enumerate(words) if word in _SUBJECT_WORDS]
    if words and 0 not in found and _is_subject(raw, words, 0):
        found.insert(0, 0)
    if len(words) > 1 and 1 not in found and _is_subject(raw, words, 1):
        found.insert(1 if found and found[0] == 0 else 0, 1)
    return found


def _is_subject(raw: Sequence[str], words: Sequence[str], i: int) -> bool:
    """A pronoun anywhere; a name or 'my wife' only where a subject stands: first."""
    word = words[i]
    return (
        word in SUBJECTS
        or (i == 1 and words[0] in POSSESSIVES)
        # "Mei's friends are ...": a possessive names whose noun follows, not a subject
        or (i == 0 and raw[i][:1].isupper() and word not in STOPWORDS and not word.endswith("'s"))
    )


def _third_person(word: str) -> bool:
    return word.endswith("s") and not word.endswith("ss")


def _verb(words: Sequence[str], j: int) -> Predicate | None:
    word = words[j]
    if word in ("can't", "cannot") and j + 1 < len(words) and words[j + 1] == "stand":
        valence = sentiment_lexicon().get("can't stand", -2.0)
        return Predicate(valence, frozenset({word, "stand"}), absorbed=1)
    found = _valence(word)
    return None if found is None else Predicate(found, frozenset({word}))


def _adjective(words: Sequence[str], j: int) -> Predicate | None:
    while j < len(words) and words[j] in DEGREE:
        j += 1
    if j + 1 >= len(words) or words[j + 1] not in ("of", "to"):
        return None
    valence = _valence(words[j])
    return None if valence is None else Predicate(valence, frozenset({words[j]}))
