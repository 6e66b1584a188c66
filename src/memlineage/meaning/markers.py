"""Does a reworded sentence say what its source says? Refuses what it cannot prove. Pure.

A model that rewords can change meaning without touching a value: drop a
"not", swap "under" for "over", lose an "except", turn "Bob said he hates
sushi" into "I hate sushi", or write "$45,000" as "fifty-four thousand
dollars". :func:`rewording_problem` reads both sentences as sequences of
normalised words and accepts a rewording only when all of these hold:

* every **marker** of the source (polarity, quantity and frequency, comparison
  and order, condition, reported speech, time, modality and tense) is in the
  rewording as often as in the source, and the rewording has none the source
  lacks;
* every **number** (digits or words, joined with its unit or currency: "5 km"
  and "five kilometres" are the same) and **identifier** ("555-0100",
  "2024-03-08", read as one token) of the source is there, and no other;
* every **name** (a capitalised word that is no common word) of the source is
  there; the persons (I, you, he, she, we, they) are the same;
* every **content word** of the rewording is a word of the source (or the name
  of its speaker or project): nothing new is said;
* the words the two share appear **in the source's order** (a subsequence of
  it), so "tea over coffee" never becomes "coffee over tea" and two values
  are never crossed between their subjects.

What it cannot read it refuses: a source not in English (no English function
word, or letters outside ASCII), markup or control characters the source
lacks. It is deliberately strict: synonyms and reordered clauses are refused
(a faithful rewording that changes a word's form is lost; a changed meaning
never passes). docs/gate.md has the table of what it guarantees.

Why by hand: the libraries that read negation scope or paraphrase (negspacy,
sentence encoders, NLI models) need a model downloaded at install or at run
time, and none of them *proves* anything: a similarity score above a
threshold is exactly what lets "over 120 ms" pass for "under 120 ms".
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memlineage.meaning.values import CURRENCY_SYMBOLS, CURRENCY_WORDS, UNIT_ALIASES


def _words(text: str) -> list[str]:
    """The words of a word list written as one string: the lists are data, kept compact."""
    return text.split()


# The classes of marker, each a word set; a word's class names the problem.
NEGATION = "negation"
QUANTITY = "quantity"
COMPARISON = "comparison"
CONDITION = "condition"
REPORTED = "reported speech"
TIME = "time"
MODALITY = "modality"
PERSON = "person"
NUMBER = "number"
NAME = "name"
NEW_WORDS = "new words"
ORDER = "order"
LANGUAGE = "language"
MARKUP = "markup"

_MARKERS: dict[str, frozenset[str]] = {
    NEGATION: frozenset(
        _words(
            "not no never none nobody nothing nowhere neither nor without cannot "
            "anymore longer stop stops stopped stopping quit quits quitting ceased "
            "gave give gives giving used formerly former ex hardly barely lack lacks "
            "lacking refuse refused refuses deny denies denied false wrong"
        )
    ),
    QUANTITY: frozenset(
        _words(
            "always usually often sometimes occasionally rarely seldom generally "
            "normally typically frequently mostly only every each all any some most "
            "many few several both either once twice thrice daily weekly monthly "
            "yearly annually hourly nightly per much little lot lots almost nearly "
            "about approximately around roughly exactly half double triple whole "
            "entire"
        )
    ),
    COMPARISON: frozenset(
        _words(
            "under over below above before after earlier later since until till "
            "within beyond more less fewer greater than least max maximum min minimum "
            "exceed exceeds up down first last next previous prior ago latest "
            "earliest older newer higher lower cheaper faster slower better worse "
            "best worst instead rather prefer prefers preferred between"
        )
    ),
    CONDITION: frozenset(
        _words(
            "if unless except excepting excluding including when whenever while "
            "provided providing case otherwise but however although though whether or"
        )
    ),
    REPORTED: frozenset(
        _words(
            "said says say told tells tell thinks think thought believes believe "
            "believed according claims claim claimed mentioned mentions reckons "
            "suggested suggests heard hears reportedly apparently supposedly "
            "allegedly forwarded wrote writes asked asks wants wanted wish wishes "
            "hope hopes"
        )
    ),
    TIME: frozenset(
        _words(
            "today tomorrow yesterday tonight now currently still already yet soon "
            "recently again this these that then morning afternoon evening night "
            "weekend weekends second seconds minute minutes hour hours day days week "
            "weeks month months year years decade decades monday tuesday wednesday "
            "thursday friday saturday sunday mondays tuesdays wednesdays thursdays "
            "fridays saturdays sundays mon tue wed thu fri sat sun"
        )
    ),
    MODALITY: frozenset(
        _words(
            "must should may might can could will would shall need needs needed have "
            "has had is are was were be been being do does did ought allowed"
        )
    ),
}
#: the class a problem is named by when several changed: the most telling first
_PRIORITY = (NEGATION, COMPARISON, CONDITION, QUANTITY, REPORTED, TIME, MODALITY)
_CLASS_OF: dict[str, str] = {w: cls for cls, words in _MARKERS.items() for w in words}

_PERSONS: dict[str, str] = {
    **dict.fromkeys(["i", "me", "my", "mine", "myself"], "1s"),
    **dict.fromkeys(["we", "us", "our", "ours", "ourselves"], "1p"),
    **dict.fromkeys(["you", "your", "yours", "yourself", "yourselves"], "2"),
    **dict.fromkeys(["he", "him", "his", "himself"], "3m"),
    **dict.fromkeys(["she", "her", "hers", "herself"], "3f"),
    **dict.fromkeys(["they", "them", "their", "theirs", "themselves"], "3p"),
}

#: words that carry no content of their own: dropped or added freely
_FUNCTION_WORDS = frozenset(
    _words(
        "a an the of in on at for with and by as so very really just also too it its "
        "there here what which who whom whose where how why into onto out off s 're "
        "'ve 'll 'd 'm 's"
    )
)

#: capitalised words that are no names: markers, persons, function words
_NOT_NAMES = frozenset(_CLASS_OF) | frozenset(_PERSONS) | _FUNCTION_WORDS

#: English words a text in English almost always has; a source with none is not read
_ENGLISH = _FUNCTION_WORDS | frozenset(_CLASS_OF) | frozenset(_PERSONS) | {"to", "from"}
#: function words of the other languages users write in (Portuguese, Spanish, French,
#: German, Italian): a text with one is not read as English, whatever else it has
_FOREIGN = frozenset(
    _words(
        "de la le el los las que und der die das nicht nunca jamais ne pas les des "
        "une um uma na em para con il di ich je eu sie es est sont ist nao nem mais "
        "pero muy sehr oui si kein keine niemals ao com sem sans avec pour dans sur "
        "mit ohne auf du et ou mas"
    )
)

_CONTRACTIONS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.I), replacement)
    for pattern, replacement in (
        (r"\bcan't\b", "can not"),
        (r"\bcannot\b", "can not"),
        (r"\bwon't\b", "will not"),
        (r"\bshan't\b", "shall not"),
        (r"\bain't\b", "am not"),
        (r"n't\b", " not"),
        (r"\bi'm\b", "i am"),
        (r"'re\b", " are"),
        (r"'ve\b", " have"),
        (r"'ll\b", " will"),
        (r"\b(i|you|he|she|we|they)'d\b", r"\1 would"),
        (r"\b(it|that|there|he|she|what|who)'s\b", r"\1 is"),
    )
)

_UNITS_BY_WORD: dict[str, str] = {
    **{k.casefold(): v for k, v in UNIT_ALIASES.items() if " " not in k},
    **{k.casefold(): "currency:" + v for k, v in CURRENCY_WORDS.items() if " " not in k},
    **{k: "currency:" + v for k, v in CURRENCY_SYMBOLS.items()},
    "%": "percent",
    "percent": "percent",
    "per cent": "percent",
}

_NUMBER_WORDS: dict[str, int] = {
    **{
        w: i
        for i, w in enumerate(
            _words(
                "zero one two three four five six seven eight nine ten eleven twelve "
                "thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
            )
        )
    },
    **{
        w: 10 * (i + 2)
        for i, w in enumerate(_words("twenty thirty forty fifty sixty seventy eighty ninety"))
    },
}
_SCALES: dict[str, int] = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}

# numbers (4,500 / 45.5 / 555-0100 / 2024-03-08 / 9:30), currency symbols, words, anything else
_TOKEN = re.compile(
    r"\d+(?:[.,:/-]\d+)*[a-zA-Z]*|US\$|CA\$|A\$|HK\$|[$€£¥₹₩₽₺₿%]|[^\W\d_]+(?:'[^\W\d_]+)?|\S",
    re.U,
)
_PLAIN_NUMBER = re.compile(r"^(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")
_NUMBER_WITH_SUFFIX = re.compile(r"^(\d+(?:\.\d+)?)([a-zA-Z]+)$")
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069<>]")


@dataclass(frozen=True)
class Reading:
    """A sentence as the check reads it: its tokens in order, and what each one is."""

    tokens: tuple[str, ...]  # normalised: markers and content words lowercased, numbers as #value
    markers: Counter[str]
    values: Counter[str]  # numbers with their unit, identifiers
    names: Counter[str]
    persons: frozenset[str]
    content: frozenset[str]
    english: bool


def unsafe_characters(text: str) -> set[str]:
    """Control characters, bidirectional overrides, zero-width marks and markup brackets."""
    return set(_UNSAFE.findall(text))


@functools.lru_cache(maxsize=4096)
def read(text: str) -> Reading:
    """``text`` as a sequence of normalised tokens, with its markers, values and names."""
    expanded = text.replace("’", "'").replace("‘", "'")
    for pattern, replacement in _CONTRACTIONS:
        expanded = pattern.sub(replacement, expanded)
    raw = _TOKEN.findall(expanded)
    tokens: list[str] = []
    names: Counter[str] = Counter()
    for token in _numbers_joined(raw):
        lower = token.casefold()
        if token[:1].isupper() and lower not in _NOT_NAMES:
            names[lower] += 1  # a capitalised first word too: "Alice likes tea" keeps Alice
        tokens.append(lower)
    markers = Counter(t for t in tokens if t in _CLASS_OF)
    values = Counter(t for t in tokens if t.startswith("#"))
    persons = frozenset(_PERSONS[t] for t in tokens if t in _PERSONS)
    content = frozenset(t for t in tokens if _is_content(t))
    words = [t for t in tokens if t[:1].isalpha()]
    ascii_letters = all(c.isascii() for c in text if c.isalpha())
    english = ascii_letters and bool(_ENGLISH.intersection(words))
    english = english and not _FOREIGN.intersection(words)
    return Reading(tuple(tokens), markers, values, names, persons, content, english)


def _is_content(token: str) -> bool:
    return (
        token[:1].isalpha()
        and token not in _FUNCTION_WORDS
        and token not in _CLASS_OF
        and token not in _PERSONS
    )


def _numbers_joined(raw: Sequence[str]) -> list[str]:
    """Numbers read as values ('five' = '5', 'fifty-four thousand' = 54000) and joined with
    their unit or currency ('$45,000' and '45,000 dollars' are one token '#45000 currency:USD')."""
    out: list[str] = []
    index = 0
    while index < len(raw):
        value, index = _number_at(raw, index)
        if value is None:
            out.append(raw[index])
            index += 1
            continue
        unit = None
        if out and _unit_of(out[-1], before=True):
            unit = _unit_of(out.pop(), before=True)
        elif index < len(raw) and _unit_of(raw[index]):
            unit = _unit_of(raw[index])
            index += 1
        out.append(f"#{value} {unit}" if unit else f"#{value}")
    return out


def _unit_of(token: str, *, before: bool = False) -> str | None:
    """The unit a token names (a currency symbol also when it comes before the number)."""
    if before:
        return "currency:" + CURRENCY_SYMBOLS[token] if token in CURRENCY_SYMBOLS else None
    if token in ("am", "pm", "a.m.", "p.m."):
        return token[0] + "m"
    return _UNITS_BY_WORD.get(token) or _UNITS_BY_WORD.get(token.casefold())


def _number_at(raw: Sequence[str], index: int) -> tuple[str | None, int]:
    """The number starting at ``raw[index]`` (digits, or number words) and where it ends."""
    token = raw[index]
    if token[:1].isdigit():
        suffixed = _NUMBER_WITH_SUFFIX.match(token)
        if suffixed and _unit_of(suffixed.group(2).casefold()):
            return _plain(suffixed.group(1)), index + 1  # '9am', '5km': the unit follows
        return (_plain(token) if _PLAIN_NUMBER.match(token) else token), index + 1
    total = current = 0
    seen = False
    end = index
    while end < len(raw):
        word = raw[end].casefold()
        if word in _NUMBER_WORDS:
            current += _NUMBER_WORDS[word]
        elif word in _SCALES and seen:
            current = max(current, 1) * _SCALES[word]
            if _SCALES[word] >= 1000:
                total, current = total + current, 0
        elif (
            seen
            and word in ("-", "and")
            and end + 1 < len(raw)
            and (raw[end + 1].casefold() in _NUMBER_WORDS)
        ):
            end += 1
            continue
        else:
            break
        seen = True
        end += 1
    if not seen:
        return None, index
    return _plain(str(total + current)), end


def _plain(number: str) -> str:
    value = float(number.replace(",", ""))
    return str(int(value)) if value == int(value) else repr(value)


def rewording_problem(source: str, rewording: str, allowed_names: Iterable[str] = ()) -> str | None:
    """The class of the first change of meaning found (or of what cannot be read); None
    when ``rewording`` provably says what ``source`` says.

    ``allowed_names``: words a rewording may add (the speaker's name, the project).
    """
    if " ".join(source.split()) == " ".join(rewording.split()):
        return None
    if unsafe_characters(rewording) - unsafe_characters(source):
        return MARKUP
    src, new = read(source), read(rewording)
    if not src.english or not new.english:
        return LANGUAGE
    extra = {w.casefold() for name in allowed_names for w in name.split()}
    if new.markers != src.markers:
        return _marker_class(src.markers, new.markers)
    if new.values != src.values:
        return NUMBER
    if src.persons != new.persons:
        return PERSON
    if any(new.names[n] < count for n, count in src.names.items()):
        return NAME
    if new.content - src.content - extra:
        return NEW_WORDS
    if not _in_order(src.tokens, new.tokens):
        return ORDER
    return None


def _marker_class(before: Counter[str], after: Counter[str]) -> str:
    changed = (before - after) + (after - before)
    return min((_CLASS_OF[word] for word in changed), key=_PRIORITY.index)


def _in_order(source: Sequence[str], rewording: Sequence[str]) -> bool:
    """The significant words the two share appear in the rewording in the source's order."""
    shared = {t for t in rewording if not _ignorable(t)} & set(source)
    wanted = [t for t in rewording if t in shared]
    it = iter(t for t in source if t in shared)
    return all(any(t == s for s in it) for t in wanted)


def _ignorable(token: str) -> bool:
    return token in _FUNCTION_WORDS or not (token[:1].isalnum() or token.startswith("#"))
