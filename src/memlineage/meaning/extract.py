"""Step 3: deterministic extraction of the must-preserve set.

Hand-written, ordered patterns over each sentence (see docs/extraction.md for
exactly what each kind recognises and what it does not). Recognisers run in a
fixed priority order and claim character spans, so an email address is never
also read as a number and a date is never also read as an account number.

Pure: no I/O. Same input, same items, same ids, whatever else is in the batch.
"""

from __future__ import annotations

import bisect
import calendar
import functools
import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from importlib.resources import files

from dateutil.parser import isoparse
from dateutil.relativedelta import relativedelta

from memlineage.meaning.values import (
    AMBIGUOUS_CURRENCY_SYMBOLS,
    AMBIGUOUS_UNIT_SPELLINGS,
    CURRENCY_CODES,
    CURRENCY_SYMBOLS,
    CURRENCY_WORDS,
    UNIT_SYMBOLS,
    UNIT_WORDS,
    canonical,
    number_value,
    scaled,
)
from memlineage.model import Conflict, Event, FactValue, Item

#: the item kinds the extractor emits (explicit facts keep their own kind)
KINDS: tuple[str, ...] = (
    "constraint",
    "negation",
    "preference",
    "decision",
    "number",
    "money",
    "date",
    "id",
    "scope",
    "conflict",
)
GLOBAL_SCOPE = "global"

# ---------------------------------------------------------------------------
# patterns, compiled once

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:\.\d{3}){2,}(?![\d.])|\d+(?:\.\d+)?"
_SCALES: dict[str, int] = {
    "k": 1_000,
    "K": 1_000,
    "thousand": 1_000,
    "m": 1_000_000,
    "M": 1_000_000,
    "mn": 1_000_000,
    "million": 1_000_000,
    "bn": 1_000_000_000,
    "B": 1_000_000_000,
    "billion": 1_000_000_000,
}
_MONEY_SCALE = r"(?:\s?(?:thousand|million|billion)|(?:k|K|mn|m|M|bn|B))(?![A-Za-z0-9])"
_NUMBER_SCALE = r"(?:\s(?:thousand|million|billion)|k|K)(?![A-Za-z0-9])"


def _alternation(words: Iterable[str], *, ignore_case: bool) -> list[tuple[str, str]]:
    return [(w, f"(?i:{re.escape(w)})" if ignore_case else re.escape(w)) for w in words]


def _unit_pattern() -> str:
    alts = _alternation(UNIT_SYMBOLS, ignore_case=False)
    alts += _alternation(UNIT_WORDS, ignore_case=True)
    alts.sort(key=lambda a: -len(a[0]))  # longest first: 'min' before 'mi', 'm/s' before 'm'
    return "(?:" + "|".join(p for _, p in alts) + r")(?![A-Za-z0-9²])"


_UNIT_AT = re.compile(r"[ \u00a0-]?(" + _unit_pattern() + ")")
# Anchored look-aheads read a bounded window, so the work per value is constant:
# the longest unit spelling plus its separator and the character after it.
_UNIT_WINDOW = max(len(a) for a in (*UNIT_SYMBOLS, *UNIT_WORDS)) + 3
_LOOKAHEAD = 48
_CUR_SYMBOL = "|".join(re.escape(s) for s in sorted(CURRENCY_SYMBOLS, key=len, reverse=True))
_CUR_CODE = "|".join(sorted(CURRENCY_CODES))
_CUR_WORD = "|".join(re.escape(w) for w in sorted(CURRENCY_WORDS, key=len, reverse=True))
_MONEY_PRE = re.compile(
    rf"(?<![\w$])(?P<cur>{_CUR_SYMBOL}|\b(?:{_CUR_CODE})\b)\s?(?P<num>{_NUM})(?P<scale>{_MONEY_SCALE})?"
)
_AMBIGUOUS_MONEY = re.compile(
    "(?<![\\w$])(?:"
    + "|".join(re.escape(s) for s in AMBIGUOUS_CURRENCY_SYMBOLS)
    + rf")\s?(?:{_NUM})(?:{_MONEY_SCALE})?"
)
# '1.250' (1250 or 1.25?) and '2,5' (2.5 written with a decimal comma)
_DOT_GROUPS = re.compile(r"\d{1,3}(?:\.\d{3})+")
_DECIMAL_COMMA = re.compile(r"(?<![\w.,])\d+,\d{1,2}(?![\d,.])")
_PACE = re.compile(
    r"(?<![\w:.])\d{1,2}:\d{2}\s?(?:min(?:utes)?\s?)?(?:/\s?|per\s+)"
    r"(?:km|kilomet(?:er|re)|mi|mile|k|100\s?m|lap)\b",
    re.IGNORECASE,
)
_MONEY_POST = re.compile(
    rf"(?<![\w.,])(?P<num>{_NUM})(?P<scale>{_MONEY_SCALE})?\s?"
    rf"(?P<cur>(?:{_CUR_CODE})\b|(?i:{_CUR_WORD})\b|€|£)"
)
_NUMBER = re.compile(rf"(?<![\w.,/#:$€£¥@-])(?P<sign>-)?(?P<num>{_NUM})(?P<scale>{_NUMBER_SCALE})?")
_RANGE_TAIL = re.compile(rf"\s*(?:-|–|to|and)\s*(?P<num>{_NUM})")

# entity ids, in priority order
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'`]+", re.IGNORECASE)
_EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_TICKET = re.compile(r"\b[A-Z][A-Z0-9]{0,9}-\d+\b")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")
_PHONE = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ -]?\(?\d{1,4}\)?){2,5}\d(?![\w-])")
_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
_VERSION = re.compile(r"\bv\d+(?:\.\d+)+\b")
_ACCOUNT = re.compile(
    r"(?<![\w.,/:#-])(?:#\d+|\d{6,}|\d{3,4}(?:[ -]\d{3,4}){2,})(?![\w/:-]|[.,]\d)"
)
# lower case ('read:billing') or upper case ('READ:BILLING'), never mixed ('Re:Meeting');
# an upper-case resource has 3 letters or more, so a name like 'CS:GO' is not a scope
_SCOPE = re.compile(
    r"(?<![\w/:.@-])(?:"
    r"(?P<res>[a-z][a-z_]*(?:\.[a-z_]+)*):[a-z*][a-z0-9_*.-]*(?::[a-z0-9_*.-]+)*"
    r"|(?P<upper>[A-Z][A-Z_]{2,}(?:\.[A-Z_]+)*):[A-Z*][A-Z0-9_*.-]*(?::[A-Z0-9_*.-]+)*"
    r")(?![\w/:@])"
)
_NOT_SCOPES = frozenset(
    {"http", "https", "mailto", "ftp", "file", "urn", "data", "tel", "ssh", "git"}
)

# dates and times
_MONTHS: dict[str, int] = {}
for _i, _name in enumerate(calendar.month_name):
    if _i:
        _MONTHS[_name.lower()] = _i
        _MONTHS[_name[:3].lower()] = _i
_MONTHS["sept"] = 9
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")"
_WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_WEEKDAY = r"(?:" + "|".join(_WEEKDAYS) + r")"
_TZ = (
    r"(?:UTC|GMT|CET|CEST|EET|EEST|WET|BST|IST|JST|KST|AEST|AEDT|EST|EDT|CST|CDT|MST|MDT"
    r"|PST|PDT|Z|[+-]\d{2}:?\d{2})"
)
_ISO = re.compile(
    r"\b(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})"
    r"(?:[T ](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.\d+)?)?"
    r"(?P<tz>Z|[+-]\d{2}:?\d{2})?)?(?![\w-])"
)
_MDY = re.compile(
    rf"\b(?P<mo>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{{4}})\b)?",
    re.IGNORECASE,
)
_DMY = re.compile(
    rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mo>{_MONTH})\b\.?(?:,?\s+(?P<y>\d{{4}})\b)?",
    re.IGNORECASE,
)
_MY = re.compile(rf"\b(?P<mo>{_MONTH})\s+(?P<y>\d{{4}})\b", re.IGNORECASE)
_SLASH = re.compile(r"(?<![\w/])(?P<mo>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4}|\d{2})(?![\w/])")
_REL_DAY = re.compile(
    r"\b(?P<w>(?:the\s+)?day\s+after\s+tomorrow|today|tonight|tomorrow|yesterday|end\s+of\s+(?:the\s+)?day|eod)\b",
    re.IGNORECASE,
)
_REL_WEEKDAY = re.compile(
    rf"\b(?:(?P<which>next|this|last|coming|on)\s+)?(?P<wd>{_WEEKDAY})\b", re.IGNORECASE
)
_REL_PERIOD = re.compile(
    r"\b(?:(?P<which>next|this|last)\s+(?P<p>week|month|year)"
    r"|end\s+of\s+(?:the\s+)?(?P<e>week|month|year))\b",
    re.IGNORECASE,
)
_COUNT = r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_REL_OFFSET = re.compile(
    rf"\b(?:in\s+(?P<n1>{_COUNT})\s+(?P<u1>day|week|month|year)s?"
    rf"|(?P<n2>{_COUNT})\s+(?P<u2>day|week|month|year)s?\s+ago)\b",
    re.IGNORECASE,
)
_TIME = re.compile(
    rf"(?<![\w:.])(?P<h>\d{{1,2}}):(?P<mi>\d{{2}})(?::(?P<s>\d{{2}}))?(?![\d:])"
    rf"(?:\s?(?P<ampm>[ap]\.?m\.?)(?![a-z]))?(?:\s?(?P<tz>{_TZ})\b)?",
    re.IGNORECASE,
)
_TIME_AMPM = re.compile(
    rf"(?<![\w:.])(?P<h>\d{{1,2}})\s?(?P<ampm>[ap]\.?m\.?)(?![a-z])(?:\s?(?P<tz>{_TZ})\b)?",
    re.IGNORECASE,
)
_TIME_WORD = re.compile(r"\b(?P<w>noon|midday|midnight)\b", re.IGNORECASE)
_DATETIME_GAP = re.compile(r"\s*(?:,|at|@|,\s*at)?\s*$", re.IGNORECASE)
_DATETIME_GAP_LIMIT = 12
_WORD_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip

# sentences and clauses
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])|\n+")
_CLAUSE = re.compile(
    r"\s*;\s*|,?\s+(?:but|however|whereas|although|though|while)\s+|\s+however,?\s+"
    r"|,?\s+(?:and|or)\s+(?=(?:always|never|must|should|shall|only|do\s+not|don't|please|"
    r"we|i|you|they|he|she|it)\b)",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")

# negation, constraints, preferences, decisions (over case-folded clause text)
_LIMIT_IDIOMS = re.compile(
    r"\b(?:no|not)\s+(?:more|less|fewer|later|earlier|longer)\s+than\b|\bnot\s+only\b"
    r"|\bno\s+matter\b|\bnot\s+to\s+exceed\b",
    re.IGNORECASE,
)
_NO_LONGER = re.compile(r"\bno\s+longer\b|\bnot\s+anymore\b", re.IGNORECASE)
_INTERJECTION_NO = re.compile(r"\s*no\s*[,!.]", re.IGNORECASE)
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_NEGATORS = frozenset(
    {"not", "no", "never", "none", "nobody", "nothing", "nowhere", "neither", "nor",
     "without", "cannot", "nope"}
)  # fmt: skip
_NEG_IMPLICATIVE = frozenset(
    {"unwilling", "unable", "unlikely", "unhappy", "unaware", "uninterested", "unacceptable",
     "unavailable", "unnecessary", "unsafe", "impossible", "incapable", "dislike", "dislikes",
     "disliked", "disagree", "disagrees", "disagreed", "fail", "fails", "failed", "failing",
     "refuse", "refuses", "refused", "forget", "forgets", "forgot", "neglect", "neglects",
     "neglected", "lack", "lacks", "lacked", "lacking", "avoid", "avoids", "avoided"}
)  # fmt: skip
_NEEDS_TO = frozenset({"fail", "fails", "failed", "failing", "forget", "forgets", "forgot"})
_SCOPE_DENIERS = frozenset(
    {"revoke", "revoked", "revokes", "remove", "removed", "removes", "deny", "denied", "denies",
     "drop", "dropped", "drops", "strip", "stripped", "lose", "lost", "withdraw", "withdrawn",
     "withdrew"}
)  # fmt: skip
_CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|shall|shan't|should|shouldn't|ought\s+to|always|only|at\s+most|at\s+least"
    r"|no\s+(?:more|less|fewer|later|earlier)\s+than|not\s+(?:more|less|later|earlier)\s+than"
    r"|not\s+to\s+exceed|(?:do|does|must|should|may|can)\s+not\s+exceed|exceed|maximum|minimum"
    r"|max|limit|limits|limited|capped|required|requires?|mandatory|forbidden|prohibited"
    r"|not\s+(?:allowed|permitted)|(?:is|are)\s+(?:allowed|permitted)|may\s+not|have\s+to|has\s+to"
    r"|needs?\s+to|deadline)\b"
    r"|\b(?:under|over|below|above|within|less\s+than|more\s+than|fewer\s+than|up\s+to|exceeds?)"
    r"\s+[$€£¥]?\d"
)
_IMPERATIVE = re.compile(r"^(?:please\s+)?(?:never|don't|do\s+not|don’t)\b")
_TEMPORAL_LIMIT = re.compile(
    r"\b(?P<word>before|after|by|until|till|no\s+later\s+than|no\s+earlier\s+than"
    r"|not\s+before|not\s+after|due)\s+(?:the\s+|end\s+of\s+)?$",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:prefer|prefers|preferred|preference|preferences|favou?rite|would\s+rather|wants?"
    r"|wish(?:es)?|likes|loves|hates|enjoys)\b"
    r"|\b(?:i|we|you|they|he|she|really|also|still)\s+(?:like|love|hate|enjoy)\b"
)
_DECISION = re.compile(
    r"\b(?:decided|decide|decides|decision|agreed|chose|chosen|choose|going\s+with|settled\s+on"
    r"|will\s+use|we'll\s+use|switch(?:ed)?\s+to|approved|selected|picked|opted)\b"
)
_OPEN_MARKERS = re.compile(
    r"\b(?:TODO|TBD|FIXME)\b|\bto-?do:|\bstill\s+(?:need|needs|have|has)\s+to\b|\bopen\s+question"
    r"|\bfollow[\s-]?up\b|\baction\s+item|\bpending\b|\bremind\s+me\b|\byet\s+to\b"
    r"|\bnot\s+(?:yet\s+)?(?:done|finished|resolved|decided)\b|\bunresolved\b|\boutstanding\b",
    re.IGNORECASE,
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOPWORDS = _words(
    """
    a an the is are was were be been being am i we you he she it they me us him her them my
    our your his its their this that these those of in on at to for from with by and or as
    so than then there here will would can could may might do does did has have had just
    also very about into per each every all any some up out it's i'm we're let's please
    which who what when where how get got our ours yours us also such via both either other
    another own same too s t don't doesn't didn't won't can't isn't aren't wasn't weren't
    shouldn't mustn't now anymore really actually
    """
)
_TRIGGER_WORDS = _NEGATORS | _words(
    """
    must shall should always only most least more less fewer later earlier exceed maximum
    minimum max limit limited capped required require requires mandatory forbidden
    prohibited allowed permitted need needs ought never deadline due under over below above
    within prefer prefers preferred preference favorite favourite rather want wants wish
    like likes love loves hate hates enjoy enjoys decided decide decision agreed chose
    chosen choose going settled approved selected picked opted use
    """
)


# Keywords used in a sense that states no rule. Narrative memories ("Sam has always
# liked turtles", "that must have been thrilling") use the constraint words for habits,
# guesses and descriptions; a constraint is always in the agent's context, so a false
# one crowds out what matters. Each sense is a word next to the keyword, read by
# ``_states_no_rule``; the keyword is then blanked from the text _CONSTRAINT reads.
#: 'must have' + a participle, 'must be' + a feeling: a guess, not an obligation
_PARTICIPLES = _words("seen taken gone known done given gotten become grown shown")
_FEELINGS = _words(
    """
    proud thrilled thrilling excited exciting exhausted exhausting tired tiring relieved
    relief amazing awesome great nice lovely wonderful incredible fun hard tough difficult
    scary nervous stressful overwhelming heartbreaking devastating rewarding frustrating
    lonely sad happy crazy dream blast nightmare
    """
)
#: 'must be so ...', 'must be such ...': an exclamation; other degree words need a feeling
#: ('must be very careful' stays a rule)
_EXCLAIM = _words("so such")
_GUESS_DEGREE = _words("really very quite pretty super incredibly absolutely truly")
_HAVE = _words("have has had i've we've you've they've")
_BE_NOW = _words("am is are be being i'm we're you're they're he's she's it's that's")
_BE_PAST = _words("was were")
#: 'the game only requires a controller': how little it takes, not a rule
#: ('the venue only takes cash' is one, so 'takes' is not here)
_ONLY_TAKES = _words("require requires")
#: what may follow a past verb ('only started running', 'only wanted to'), never a noun
_AFTER_VERB = _words(
    """
    to a an the his her their my our your its it him them me us this that some last
    yesterday recently when after before in on at for with once back up out
    """
)
#: before 'required' as an adjective or passive ('is required', 'the required forms')
_BEFORE_REQUIRED = _words(
    "is are am was were be been being not no the a an any all if as when where unless also"
)
#: after 'required' as a rule ('required to', 'required by law', 'required for entry')
_AFTER_REQUIRED = _words(
    """
    to by for in on at every within before after from of under unless if when and or but
    """
)
#: a capitalised keyword that opens a sentence is a name unless a number follows
_NAME_KEYWORDS = _words("max")
#: 'Max' mid-sentence: capital then lower case, after a word or a comma
_TITLE_CASE = re.compile(r"[A-Z][a-z]+")
_DIGIT = re.compile(r"\d")

# value polarity: what may stand between a negation and the value it governs
_GAP_LIMIT = 60
_GAP_PUNCT = re.compile(r"[,;:()\[\]\"]")
_BRIDGE_WORDS = _words(
    """
    a an the on at in for of to be been being is are was were am exactly really quite just
    even ever that this these those my our your his her their its me you him us them it
    any about around
    """
)
_VALUE_VERBS = _words(
    """
    agree agreed agrees accept accepted accepts approve approved approves sign signed signs
    pay paid pays owe owed owes spend spent spends charge charged charges offer offered
    offers promise promised promises say said says quote quoted quotes ask asked asks want
    wanted wants need needed needs have had has get got gets order ordered orders book
    booked books buy bought buys earn earned earns make made makes cost costs run ran runs
    weigh weighed weighs see saw sees
    """
)
# '… was withdrawn' after a scope or value: a deny predicate; 'was never granted' too
_DENY_AFTER = _words(
    """
    withdrawn revoked removed denied refused dropped rejected disabled blocked pulled
    suspended cancelled canceled taken
    """
)
_AFTER_DENIAL = re.compile(
    r"[\s'’]*(?:s\s+)?(?:[^\W\d_]+\s+){0,3}?"
    r"(?:is|are|was|were|be|got|gets|get|has\s+been|have\s+been|had\s+been)\s+"
    r"(?:now\s+|also\s+|just\s+|then\s+|since\s+|again\s+)?"
    r"(?P<neg>(?:not|never|no\s+longer)\s+)?"
    r"(?P<verb>withdrawn|revoked|removed|denied|refused|dropped|rejected|disabled|blocked"
    r"|pulled|suspended|cancell?ed|taken\s+away|granted|given|approved"
    r"|allowed|enabled|added|kept|restored)\b",
    re.IGNORECASE,
)

# weekdays: a past-tense clause reads a bare weekday backward ('I went sailing on Sunday')
_PAST_FORMS = _words(
    """
    was were did had went came saw got met made took gave told said spent left ran ate drank
    bought paid sent found thought felt kept lost won flew drove rode swam wrote began forgot
    heard sold sat stood slept caught brought taught fought built held knew grew threw wore
    broke spoke chose fell woke hung led lent meant sang sank hid fed fled dug stuck struck
    swung understood wasn't weren't didn't hadn't
    """
)
_NOT_PAST_ED = _words(
    """
    need feed seed speed indeed bed red shed hundred proceed succeed exceed embed weed breed
    bleed sacred naked wicked shared
    """
)
_PASSIVE_AUX = _words("am is are be being will i'm we're you're they're he's she's it's get gets")
_FUTURE = re.compile(
    r"\b(?:will|shall|going\s+to|gonna|plan(?:s|ning)?\s+to|next|tomorrow|upcoming)\b|'ll\b",
    re.IGNORECASE,
)
_WEEKDAY_TARGET = re.compile(
    r"\b(?:for|to|until|till|by|before|from|every|each)\s*$", re.IGNORECASE
)
_TENSE_WINDOW = 100

# preferences: subjects, the words that may stand between a subject and its predicate
_SUBJECTS = _words("i we you they he she")
_PLAIN_SUBJECTS = _words("i we you they")
_SUBJECT_BE = _words("i'm we're you're they're he's she's")
_POSSESSIVES = _words("my our your his her their")
_BE = _words("am is are was were be")
_PRE_VERB = _words(
    """
    really truly absolutely totally just still also now genuinely honestly simply actually
    definitely do does would so deeply secretly always kind sort of quite very much
    """
)
_DEGREE = _words("so very really quite severely deathly extremely a bit little rather pretty")
# lexicon words after a subject that are not attitudes towards something
_NOT_ATTITUDES = _words(
    """
    hurt kill fail lose miss worry doubt cry suffer die win agree thank thanks help please
    pray fight attack argue hope apologize apologise promise like's sorry well fine
    struggle share stress problem cause support encourage
    """
)
# attitude verbs the VADER lexicon lacks (checked: no entry for them or their inflections)
_LEXICON_SUPPLEMENT: dict[str, float] = {"detest": -2.5}
_MIN_VALENCE = 1.0


# ---------------------------------------------------------------------------
# spans


@dataclass
class _Span:
    start: int
    end: int
    kind: str
    value: FactValue
    unit: str | None = None
    subtype: str = ""
    noun: str = ""


@dataclass(eq=False)
class _Sentence:
    """A sentence and the non-overlapping spans recognisers have claimed.

    Every per-span question (is this range free, what comes before this value)
    is answered from structures built once per sentence, so reading a sentence
    costs time linear in its length however many values it holds.
    """

    text: str
    spans: list[_Span] = field(default_factory=list)
    claimed: bytearray = field(init=False)
    # ISO-day date spans by their end offset: a time right after one joins it
    day_ends: dict[int, _Span] = field(default_factory=dict)
    starts: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.claimed = bytearray(len(self.text))

    def free(self, start: int, end: int) -> bool:
        return self.claimed.find(1, start, end) == -1

    def claim(self, start: int, end: int) -> None:
        self.claimed[start:end] = b"\x01" * (end - start)

    def take(self, span: _Span) -> bool:
        if not self.free(span.start, span.end):
            return False
        self.claim(span.start, span.end)
        self.spans.append(span)
        if span.kind == "date" and isinstance(span.value, str) and _ISO_DAY.fullmatch(span.value):
            self.day_ends[span.end] = span
        return True

    def finish(self) -> None:
        """Sort the spans once every recogniser has run."""
        self.spans.sort(key=lambda s: s.start)
        self.starts = [s.start for s in self.spans]

    @functools.cached_property
    def clauses(self) -> list[tuple[int, int]]:
        return _clauses(self.text)

    def clause_of(self, offset: int) -> tuple[int, int]:
        clauses = self.clauses
        at = bisect.bisect_right(clauses, (offset, len(self.text) + 1)) - 1
        return clauses[at] if at >= 0 else (0, len(self.text))

    @functools.cached_property
    def verbatim_clauses(self) -> dict[int, str]:
        """Per clause start: the clause as written (whitespace collapsed), built once."""
        return {start: _verbatim(self.text[start:end]) for start, end in self.clauses}

    def verbatim_clause_of(self, offset: int) -> str:
        start, end = self.clause_of(offset)
        found = self.verbatim_clauses.get(start)
        return found if found is not None else _verbatim(self.text[start:end])

    def spans_in(self, start: int, end: int) -> list[_Span]:
        return self.spans[
            bisect.bisect_left(self.starts, start) : bisect.bisect_left(self.starts, end)
        ]

    def spans_between(self, start: int, end: int) -> int:
        """How many spans start in [start, end)."""
        return bisect.bisect_left(self.starts, end) - bisect.bisect_left(self.starts, start)

    @functools.cached_property
    def anchor_words(self) -> tuple[list[int], list[str]]:
        """Start offsets and words that may name what a value is *of*, in one pass.

        Free (unclaimed) words that are neither stop words, digits nor trigger words.
        """
        starts: list[int] = []
        words: list[str] = []
        for match in _WORD.finditer(self.text):
            word = match.group().casefold()
            if word in _STOPWORDS or word in _TRIGGER_WORDS or word.isdigit():
                continue
            if self.free(match.start(), match.end()):
                starts.append(match.start())
                words.append(word)
        return starts, words

    @functools.cached_property
    def negation_marks(self) -> dict[int, list[int]]:
        """Per clause start: end offsets of each negation in that clause (one pass)."""
        return {start: _negation_marks(self.text, start, end) for start, end in self.clauses}

    @functools.cached_property
    def denial_marks(self) -> dict[int, list[int]]:
        """Per clause start: end offsets of negations and deny verbs ('revoke')."""
        marks: dict[int, list[int]] = {}
        for start, end in self.clauses:
            found = list(self.negation_marks[start])
            for match in _WORD.finditer(self.text, start, end):
                if match.group().casefold() in _SCOPE_DENIERS:
                    found.append(match.end())
            marks[start] = sorted(found)
        return marks


# ---------------------------------------------------------------------------
# public API


def extract_items(events: Sequence[Event], conflicts: Sequence[Conflict] = ()) -> list[Item]:
    """The must-preserve items of the events plus one item per unresolved conflict.

    Items of one event depend on that event alone, so inserting, removing or
    reordering other events never changes them.
    """
    items: list[Item] = []
    for event in events:
        items.extend(event_items(event))
    for conflict in conflicts:
        if not conflict.resolved:
            items.append(conflict_item(conflict))
    return items


#: The version of the extraction rules, stored beside each subject's item kinds
#: (store/detect.py, docs/recall.md). Bump it with any change here or in values.py
#: that may change the kinds of an event's items: stored kinds of another version
#: are ignored by recall and rebuilt by the detection job.
RULES_VERSION = 2  # 2: event_kinds also marks open items (OPEN_ITEM)

#: The mark event_kinds adds for an open item (an event expected_open_items keeps
#: open); it is not an item kind. Recall reads it with the stored kinds instead of
#: running the open-item patterns over every event again.
OPEN_ITEM = "open-item"

#: events whose items are remembered per process (about 1 KB each); above the
#: 100,000 events of a large subject plus the statement texts the gate reads
ITEM_CACHE_SIZE = 1 << 18


def event_items(event: Event) -> list[Item]:
    """The items of one event: its explicit facts, then what its text says.

    Items depend on the event alone (every field of it is the cache key, its
    ``recorded_at`` included), so they are computed once per process and event:
    a consolidation re-reads the same events every run. A pure cache of a pure
    function: nothing about the store is remembered.
    """
    return list(_cached_event_items(event))


def event_kinds(event: Event) -> tuple[str, ...]:
    """The distinct kinds of an event's items, and OPEN_ITEM for an open item, sorted:
    what recall needs to know of an event beyond its text."""
    kinds = {item.kind for item in _cached_event_items(event)}
    if is_open_item(event):
        kinds.add(OPEN_ITEM)
    return tuple(sorted(kinds))


@functools.lru_cache(maxsize=ITEM_CACHE_SIZE)
def _cached_event_items(event: Event) -> tuple[Item, ...]:
    return tuple(_event_items(event))


def _event_items(event: Event) -> list[Item]:
    scope = event.project or GLOBAL_SCOPE
    seen: set[str] = set()
    items: list[Item] = []
    for fact in event.facts:
        _add(items, seen, event.id, fact.kind, f"{scope}/fact/{fact.key}", fact.value, fact.unit,
             fact.polarity, "")  # fmt: skip
    anchor = _anchor_of(event)
    text_kinds = 0
    for sentence in split_sentences(event.text):
        for kind, key, value, unit, polarity, clause in _sentence_items(sentence, scope, anchor):
            text_kinds += kind in _CLAUSE_KINDS
            _add(items, seen, event.id, kind, key, value, unit, polarity, clause)
    if not text_kinds and event.kind in _CLAUSE_KINDS and event.text.strip():
        # a constraint/preference/decision event whose wording no pattern caught: keep it whole
        value = _clause_value(event.text)
        key = f"{scope}/{event.kind}/{_slug(_content_words(value)) or 'text'}"
        _add(items, seen, event.id, event.kind, key, value, None, True, _verbatim(event.text))
    return items


def conflict_item(conflict: Conflict) -> Item:
    """An unresolved conflict as an item; both sides must appear in its claim's derivedFrom."""
    return _item(conflict.a, "conflict", f"conflict/{conflict.id}", conflict.id, None, True)


def expected_open_items(events: Sequence[Event]) -> tuple[str, ...]:
    """Ids of the events an output must keep open: kind 'task', or a text marker (TODO, ...)."""
    return tuple(e.id for e in events if is_open_item(e))


def is_open_item(event: Event) -> bool:
    return event.kind == "task" or _OPEN_MARKERS.search(event.text) is not None


def item_id(
    source: str, kind: str, key: str, value: FactValue, unit: str | None, polarity: bool
) -> str:
    family, magnitude = canonical(value, unit)
    digest = hashlib.sha256(
        "\x1f".join((source, kind, key, family, magnitude, str(polarity))).encode(
            "utf-8", "surrogatepass"
        )
    ).hexdigest()
    return "itm-" + digest[:20]


def text_values(text: str) -> list[tuple[FactValue, str | None, str]]:
    """(value, unit, surface) of every number, amount and absolute date in a text.

    The gate reads a summary with it; relative dates have no anchor there and are skipped.
    """
    found: list[tuple[FactValue, str | None, str]] = []
    for part in split_sentences(text):
        sentence = _recognised(part, None)
        for span in sentence.spans:
            if span.kind in ("number", "money", "date"):
                found.append((span.value, span.unit, part[span.start : span.end]))
    return found


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the sentences of a text, surrounding whitespace excluded.

    ``text[start:end]`` is exactly each string :func:`split_sentences` returns, so a
    caller can keep a sentence verbatim and know where it stands.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for match in [*_SENTENCE.finditer(text), None]:
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


def split_sentences(text: str) -> list[str]:
    """The sentences of a text: after . ! ? followed by whitespace and a capital,
    digit, quote or bracket, and at every newline; each stripped."""
    return [text[start:end] for start, end in sentence_spans(text)]


# ---------------------------------------------------------------------------
# assembling items

_CLAUSE_KINDS = frozenset({"constraint", "negation", "preference", "decision"})
# kind, key, value, unit, polarity, verbatim clause
_Found = tuple[str, str, FactValue, str | None, bool, str]


def _item(
    source: str,
    kind: str,
    key: str,
    value: FactValue,
    unit: str | None,
    polarity: bool,
    clause: str = "",
) -> Item:
    return Item(
        item_id(source, kind, key, value, unit, polarity),
        source,
        kind,
        key,
        value,
        unit,
        polarity,
        clause,
    )


def _add(
    items: list[Item],
    seen: set[str],
    source: str,
    kind: str,
    key: str,
    value: FactValue,
    unit: str | None,
    polarity: bool,
    clause: str,
) -> None:
    item = _item(source, kind, key, value, unit, polarity, clause)
    if item.id not in seen:  # the same statement twice in one event is one item
        seen.add(item.id)
        items.append(item)


def _anchor_of(event: Event) -> datetime | None:
    """The instant relative dates resolve against: ``at``, else ``recorded_at``, else none.

    ``isoparse`` keeps the UTC offset written in the stamp, so ``.date()`` is the
    event's own local day: 'tomorrow' sent at 2026-03-04T23:00:00-07:00 is March 5.
    """
    for stamp in (event.at, event.recorded_at):
        if stamp:
            try:
                return isoparse(stamp)
            except (ValueError, OverflowError):
                continue
    return None


def _recognised(text: str, anchor: datetime | None) -> _Sentence:
    sentence = _Sentence(text)
    for recognise in _RECOGNISERS:
        recognise(sentence, anchor)
    sentence.finish()
    return sentence


def _sentence_items(text: str, scope: str, anchor: datetime | None) -> Iterator[_Found]:
    sentence = _recognised(text, anchor)
    ids = [s for s in sentence.spans if s.kind == "id"]
    entity = f"[{ids[0].value}]" if ids else ""
    for span in sentence.spans:
        clause = sentence.verbatim_clause_of(span.start)
        if span.kind == "id":
            key = f"{scope}/id/{span.subtype}:{span.value}"
            yield "id", key, span.value, None, True, clause
        elif span.kind == "scope":
            key = f"{scope}/scope/{str(span.value).casefold()}{entity}"
            yield "scope", key, span.value, None, _scope_polarity(sentence, span), clause
        else:
            anchor_words = _anchor_words(sentence, span)
            key = f"{scope}/{span.kind}/{_slug(anchor_words) or span.kind}{entity}"
            polarity = _value_polarity(sentence, span)
            yield span.kind, key, span.value, span.unit, polarity, clause
    yield from _clause_items(sentence, scope, entity)


# ---------------------------------------------------------------------------
# clause kinds: constraint, negation, preference, decision


def _clauses(text: str) -> list[tuple[int, int]]:
    bounds: list[tuple[int, int]] = []
    start = 0
    for match in _CLAUSE.finditer(text):
        bounds.append((start, match.start()))
        start = match.end()
    bounds.append((start, len(text)))
    return [(a, b) for a, b in bounds if text[a:b].strip()]


def _negations(clause: str) -> int:
    """How many negations a clause carries (2 = double negation = affirmed)."""
    return len(_negation_marks(clause, 0, len(clause)))


def _negation_marks(text: str, start: int, end: int) -> list[int]:
    """End offsets of the negations in ``text[start:end]``, in order.

    Limit idioms ('no more than'), 'not only', 'no matter' and an opening 'No,'
    are not negations; 'no longer' and 'not anymore' count once.
    """
    masked = [(m.start(), m.end()) for m in _LIMIT_IDIOMS.finditer(text, start, end)]
    marks = []
    for m in _NO_LONGER.finditer(text, start, end):
        masked.append((m.start(), m.end()))
        marks.append(m.end())
    interjection = _INTERJECTION_NO.match(text, start, end)
    if interjection:
        masked.append((interjection.start(), interjection.end()))
    masked.sort()
    words = [m for m in _WORD.finditer(text, start, end) if not _inside(masked, m.start())]
    for i, match in enumerate(words):
        word = match.group().casefold().replace("’", "'")
        if _is_negation(word, words[i + 1].group().casefold() if i + 1 < len(words) else ""):
            marks.append(match.end())
    return sorted(marks)


def _is_negation(word: str, following: str) -> bool:
    if word in _NEGATORS or word.endswith("n't"):
        return True
    # 'fails to reply' negates 'reply'; 'the request failed' negates nothing
    return word in _NEG_IMPLICATIVE and (word not in _NEEDS_TO or following == "to")


def _inside(intervals: list[tuple[int, int]], offset: int) -> bool:
    at = bisect.bisect_right(intervals, (offset, 1 << 62)) - 1
    return at >= 0 and intervals[at][0] <= offset < intervals[at][1]


def _clause_kind(
    clause: str,
    sentence: _Sentence,
    bounds: tuple[int, int],
    predicate: _Predicate | None,
    negations: int,
) -> str | None:
    """``negations``: the clause's negations, less those of its predicate ("can't stand")."""
    offset, end = bounds
    if _IMPERATIVE.match(clause) or _states_a_rule(clause, sentence, offset, end):
        return "constraint"
    if _has_temporal_limit(sentence, offset, offset + len(clause)):
        return "constraint"
    if negations:
        return "negation"
    if predicate is not None or _PREFERENCE.search(clause):
        return "preference"
    if _DECISION.search(clause):
        return "decision"
    return None


def _has_temporal_limit(sentence: _Sentence, start: int, end: int) -> bool:
    """A date after 'before', 'by', 'until', 'due', ... in the clause.

    'before'/'after' a date in a clause told in the past ('Theo moved to Berlin
    after March 2023') say when something happened, not a limit to keep.
    """
    told_in_past: bool | None = None  # read once per clause, on the first 'before'/'after'
    for span in sentence.spans_in(start, end):
        if span.kind != "date":
            continue
        window = max(start, span.start - 30)
        limit = _TEMPORAL_LIMIT.search(sentence.text, window, span.start)
        if limit is None:
            continue
        if limit["word"].casefold() in ("before", "after"):
            if told_in_past is None:
                told_in_past = _told_in_past(sentence.text, start, end)
            if told_in_past:
                continue
        return True
    return False


def _told_in_past(text: str, start: int, end: int) -> bool:
    """A past verb ('moved', 'went') in the clause and no future ('will', 'next')."""
    if _FUTURE.search(text, start, end):
        return False
    previous = ""
    for match in _WORD.finditer(text, start, end):
        word = match.group().casefold().replace("’", "'")
        if _past_form(word, previous):
            return True
        previous = word
    return False


def _past_form(word: str, previous: str) -> bool:
    """'went', 'was', or an '-ed' verb not after 'is'/'will'/... ('is required' is not past)."""
    return word in _PAST_FORMS or (
        word.endswith("ed")
        and len(word) > 3
        and word not in _NOT_PAST_ED
        and previous not in _PASSIVE_AUX
    )


def _states_a_rule(clause: str, sentence: _Sentence, start: int, end: int) -> bool:
    """A constraint keyword in the clause, used in a sense that states a rule.

    Most clauses hold no keyword at all, so the senses are read only when one is there.
    """
    return bool(_CONSTRAINT.search(clause)) and bool(
        _CONSTRAINT.search(_rule_text(sentence, start, end))
    )


def _rule_text(sentence: _Sentence, start: int, end: int) -> str:
    """The clause as the constraint patterns read it: case-folded, each keyword used
    in a sense that states no rule (``_states_no_rule``) blanked out."""
    text = sentence.text
    words = list(_WORD.finditer(text, start, end))
    folded = [m.group().casefold().replace("’", "'") for m in words]
    has_digit = _DIGIT.search(text, start, end) is not None
    parts: list[str] = []
    at = start
    for i, match in enumerate(words):
        if _is_name(text, match, has_digit) or _states_no_rule(folded, i, text, words):
            parts.append(text[at : match.start()])
            parts.append(" " * len(match.group()))
            at = match.end()
    parts.append(text[at:end])
    return "".join(parts).casefold().replace("’", "'").strip()


def _is_name(text: str, match: re.Match[str], has_digit: bool) -> bool:
    """A capitalised word inside a sentence is a name ('his dog, Max', 'Sam met Max');
    at the start of one, 'Max' is a name unless a number follows ('Max 3 meetings')."""
    word = match.group()
    if _TITLE_CASE.fullmatch(word) is None:
        return False  # lower case, or 'ALWAYS' written for emphasis
    before = match.start() - 1
    while before >= 0 and text[before].isspace():
        before -= 1
    if before >= 0 and (text[before].isalnum() or text[before] == ","):
        return True  # not after an opening (start, ':', ';', a quote, a bracket)
    return word.casefold() in _NAME_KEYWORDS and not has_digit


def _states_no_rule(words: list[str], i: int, text: str, matches: list[re.Match[str]]) -> bool:
    """Is ``words[i]`` a constraint keyword used for a habit, a guess or a description?

    'a must-visit city', 'must have been thrilling', 'you must be so proud', 'not only
    ... but also', 'has always liked', 'is always looking', 'they always made her
    smile', 'always be there for him', 'was only an hour', 'only got back', 'only
    requires a controller', 'the trip required months of planning', 'a limited
    edition'. The senses that state a rule keep the word: 'I always fly business',
    'must have a passport', 'must be signed', 'use only approved vendors', 'is required'.
    """
    word = words[i]
    if word == "must've":
        return True  # the contraction is only ever a guess about the past
    if word not in ("must", "always", "only", "required", "require", "requires", "limited"):
        return False
    end = matches[i].end()
    if text[end : end + 1] == "-" and text[end + 1 : end + 2].isalpha():
        return True  # 'must-have', 'always-on', 'limited-edition': part of a compound
    previous = words[i - 1] if i else ""
    following = words[i + 1] if i + 1 < len(words) else ""
    after = words[i + 2] if i + 2 < len(words) else ""
    if word == "must":
        return _guessed(words, i)
    if word == "always":
        return _habit(previous, following, after)
    if word == "only":
        return _just(previous, following, after)
    if word == "required":
        spaced = i + 1 < len(words) and not text[end : matches[i + 1].start()].strip()
        return _past_required(previous, following if spaced else "")
    if word in _ONLY_TAKES:  # 'X only requires Y', but not 'not only requires Y but also Z'
        return previous == "only" and i >= 2 and words[i - 2] != "not" and following != "to"
    return following in ("edition", "time")  # 'a limited edition line': a product


def _guessed(words: list[str], i: int) -> bool:
    """'must have been', 'must have felt', "must've", 'must be so proud', 'must be a relief'."""
    following = words[i + 1] if i + 1 < len(words) else ""
    if following == "have":
        participle = words[i + 2] if i + 2 < len(words) else ""
        if participle == "been":
            # 'must have been thrilling', but a rule in the perfect passive stays one:
            # 'must have been signed by the CFO'
            state = words[i + 3] if i + 3 < len(words) else ""
            return state in _FEELINGS or not _past_form(state, "been")
        return participle in _PARTICIPLES or _past_form(participle, "have")
    if following != "be":
        return False
    j = i + 2
    if j < len(words) and words[j] in ("a", "an"):
        j += 1
    if j < len(words) and words[j] in _EXCLAIM:
        return True
    while j < len(words) and words[j] in _GUESS_DEGREE:
        j += 1
    return j < len(words) and words[j] in _FEELINGS


def _habit(previous: str, following: str, after: str) -> bool:
    """'always' for a character or a past habit, not a standing rule."""
    return (
        previous in _HAVE  # 'has always liked': the perfect tells a life so far
        or following == "been"  # "she's always been there"
        or previous in _BE_PAST  # 'were always supportive'
        or (previous in _BE_NOW and following.endswith("ing") and len(following) > 5)
        or following == "there"  # 'always there to have his back'
        or (following == "be" and after == "there")  # 'always be there for him'
        or (following == "up" and after == "for")  # 'always up for a challenge'
        or (previous not in _BE_NOW and _past_form(following, "always"))  # 'always made'
    )


def _past_required(previous: str, following: str) -> bool:
    """'the bakery required months of planning': a verb in the past with a subject
    before it and an object after it; not 'is required', 'the required forms',
    'required to', 'required by law' (``following`` is empty after punctuation)."""
    return (
        bool(previous)
        and bool(following)
        and previous not in _BEFORE_REQUIRED
        and not previous.endswith(("n't", "'s", "'re"))
        and following not in _AFTER_REQUIRED
    )


def _just(previous: str, following: str, after: str) -> bool:
    """'only' meaning 'just' or 'merely', not a restriction."""
    if previous in ("not", "had") or previous in _BE_PAST:
        return True  # 'not only ... but also', 'it was only a matter of time'
    if previous and following in _ONLY_TAKES and after != "to":
        return True  # 'the game only requires a controller': all it takes
    if following in _PAST_FORMS:
        return True  # 'Priya only got back'
    # 'only started running' (a past verb), not 'only approved vendors' (an adjective)
    # nor 'are only accepted in EUR' (a passive)
    return (
        previous not in _BE_NOW
        and _past_form(following, "only")
        and (after in _AFTER_VERB or after.endswith("ing") or not after)
    )


def _clause_items(sentence: _Sentence, scope: str, entity: str) -> Iterator[_Found]:
    text = sentence.text
    for start, end in sentence.clauses:
        raw = text[start:end]
        clause = raw.casefold().replace("’", "'").strip()
        predicate = _attitude(raw)
        # the clause's negations, counted once per sentence on its original text
        negations = len(sentence.negation_marks[start]) - (predicate.absorbed if predicate else 0)
        kind = _clause_kind(clause, sentence, (start, end), predicate, negations)
        if kind is None:
            continue
        polarity = negations % 2 == 0
        if kind == "preference" and predicate is not None:
            # 'I detest olives': the predicate's lexicon valence gives the polarity
            polarity = polarity == (predicate.valence > 0)
        value = _clause_value(raw)
        skip = predicate.words if predicate is not None else frozenset()
        words = [
            w
            for w in _content_words(value)
            if w not in _TRIGGER_WORDS and w not in skip and w.isalpha()
        ]
        anchor = _slug(words) or _slug(_content_words(value)) or kind
        clause_text = sentence.verbatim_clauses[start]
        yield kind, f"{scope}/{kind}/{anchor}{entity}", value, None, polarity, clause_text


def _clause_value(text: str) -> str:
    """A clause kind's value: the clause case-folded, for comparison (Item.clause keeps it)."""
    return " ".join(text.split()).strip(" .!?,;:").casefold()


def _verbatim(text: str) -> str:
    """A clause as written: original case and punctuation, whitespace collapsed."""
    return " ".join(text.split())


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.casefold()) if w not in _STOPWORDS]


def _slug(words: Sequence[str], limit: int = 6) -> str:
    return "-".join(w.replace("'", "").replace("’", "") for w in words[:limit])


def _anchor_words(sentence: _Sentence, span: _Span) -> list[str]:
    """What a number, amount or date is *of*: up to 3 content words before it in its clause.

    Falls back to the words after it; a count's noun ('3 servers') is appended.
    Found by bisection in the sentence's word index, so each value costs O(log n).
    """
    clause_start, clause_end = sentence.clause_of(span.start)
    starts, all_words = sentence.anchor_words
    first = bisect.bisect_left(starts, clause_start)
    here = bisect.bisect_left(starts, span.start)
    words = all_words[max(first, here - 3) : here]
    if not words:
        after = bisect.bisect_left(starts, span.end)
        words = all_words[after : min(after + 3, bisect.bisect_left(starts, clause_end))]
    if span.noun and span.noun not in words:
        words = [*words, span.noun]
    return words


def _value_polarity(sentence: _Sentence, span: _Span) -> bool:
    """Is a number, amount or date stated (True) or denied (False)?

    Denied when a negation governs it: the nearest negation before it in its
    clause is separated from it only by function words and at most one verb that
    takes a value ('not on June 3', 'never agreed to a $700 fee', 'isn't 500'),
    with no other value in between ('not 5 mi' but '..., it's on June 4'). A bound
    in between keeps it stated ('never spend more than 500 EUR': the clause is the
    constraint). Or when a deny verb follows it ('the $700 offer was rejected').
    """
    clause_start, clause_end = sentence.clause_of(span.start)
    marks = sentence.negation_marks.get(clause_start, [])
    at = bisect.bisect_right(marks, span.start)
    denied = False
    if at:
        mark = marks[at - 1]
        gap = sentence.text[mark : span.start]
        denied = (
            len(gap) <= _GAP_LIMIT
            and sentence.spans_between(mark, span.start) == 0
            and _governs(gap)
        )
    return denied == _denied_after(sentence, span, clause_end)


def _governs(gap: str) -> bool:
    verbs = 0
    for word in _WORD.findall(gap.casefold().replace("’", "'")):
        if word in _VALUE_VERBS:
            verbs += 1
        elif word not in _BRIDGE_WORDS:
            return False
    return verbs <= 1 and _GAP_PUNCT.search(gap) is None


def _denied_after(sentence: _Sentence, span: _Span, clause_end: int) -> bool:
    """'… permission was withdrawn', 'is refused', 'was never granted' right after a span."""
    m = _AFTER_DENIAL.match(sentence.text, span.end, min(clause_end, span.end + _GAP_LIMIT))
    if m is None:
        return False
    deny = m["verb"].casefold().split()[0] in _DENY_AFTER
    return deny != bool(m["neg"])


def _scope_polarity(sentence: _Sentence, span: _Span) -> bool:
    """Negators and deny verbs ('revoke', 'remove') before the scope in its clause,
    and a deny predicate after it ('was withdrawn', 'is refused')."""
    clause_start, clause_end = sentence.clause_of(span.start)
    marks = sentence.denial_marks.get(clause_start, [])
    denials = bisect.bisect_right(marks, span.start)
    return (denials % 2 == 0) != _denied_after(sentence, span, clause_end)


# ---------------------------------------------------------------------------
# preferences from a sentiment lexicon


@dataclass(frozen=True)
class _Predicate:
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


def _valence(word: str) -> float | None:
    """The valence of an attitude verb or adjective, its 3rd-person form included."""
    if word in _PAST_FORMS or word.endswith(("ed", "ing")):
        return None
    forms = list(_base_forms(word))
    if any(form in _NOT_ATTITUDES for form in forms):
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


def _attitude(clause: str) -> _Predicate | None:
    """The attitude predicate of a clause, if its subject holds one.

    'I detest olives', 'Sam loves jazz', 'My wife hates cilantro', "I can't stand
    noise", "I'm allergic to shellfish", 'We are fond of hiking': the word after a
    subject (a pronoun, a capitalised name, 'my wife', …), past optional adverbs,
    looked up in the lexicon; or an adjective after a form of 'be' followed by
    'of'/'to'. Past forms ('I lost my keys') and words that are not attitudes
    ('I hurt my knee') are skipped.
    """
    tokens = [(m.group(), m.group().casefold().replace("’", "'")) for m in _WORD.finditer(clause)]
    for i, (_, word) in enumerate(tokens):
        subject_be = word in _SUBJECT_BE
        if not (subject_be or _is_subject(tokens, i)):
            continue
        j = i + 1
        while j < len(tokens) and tokens[j][1] in _PRE_VERB:
            j += 1
        if j >= len(tokens):
            return None
        if subject_be or tokens[j][1] in _BE:
            found = _adjective(tokens, j if subject_be else j + 1)
        elif word in _PLAIN_SUBJECTS or _third_person(tokens[j][1]):
            # 'Sam loves', 'my wife hates': a singular subject's verb ends in -s, which
            # keeps imperatives ('Call support') and nouns ('Our team has') out
            found = _verb(tokens, j)
        else:
            found = None
        if found is not None:
            return found
    return None


def _is_subject(tokens: list[tuple[str, str]], i: int) -> bool:
    """A pronoun anywhere; a name or 'my wife' only where a subject stands: first."""
    raw, word = tokens[i]
    return (
        word in _SUBJECTS
        or (i == 1 and tokens[0][1] in _POSSESSIVES)
        # "Mei's friends are ...": a possessive names whose noun follows, not a subject
        or (i == 0 and raw[:1].isupper() and word not in _STOPWORDS and not word.endswith("'s"))
    )


def _third_person(word: str) -> bool:
    return word.endswith("s") and not word.endswith("ss")


def _verb(tokens: list[tuple[str, str]], j: int) -> _Predicate | None:
    word = tokens[j][1]
    if word in ("can't", "cannot") and j + 1 < len(tokens) and tokens[j + 1][1] == "stand":
        valence = sentiment_lexicon().get("can't stand", -2.0)
        return _Predicate(valence, frozenset({word, "stand"}), absorbed=1)
    found = _valence(word)
    return None if found is None else _Predicate(found, frozenset({word}))


def _adjective(tokens: list[tuple[str, str]], j: int) -> _Predicate | None:
    while j < len(tokens) and tokens[j][1] in _DEGREE:
        j += 1
    if j + 1 >= len(tokens) or tokens[j + 1][1] not in ("of", "to"):
        return None
    valence = _valence(tokens[j][1])
    return None if valence is None else _Predicate(valence, frozenset({tokens[j][1]}))


# ---------------------------------------------------------------------------
# recognisers, in priority order


def _ids(sentence: _Sentence, anchor: datetime | None) -> None:
    text = sentence.text
    for pattern, subtype in (
        (_URL, "url"),
        (_EMAIL, "email"),
        (_UUID, "uuid"),
    ):
        for m in pattern.finditer(text):
            value = m.group()
            if subtype == "url":
                value = value.rstrip(".,;:!?)]}")
            end = m.start() + len(value)
            sentence.take(_Span(m.start(), end, "id", _normalize_id(value, subtype), None, subtype))
    _iso_dates(sentence, anchor)  # before tickets and accounts: 2024-03-05 is a date
    for pattern, subtype in (
        (_TICKET, "ticket"),
        (_IBAN, "account"),
        (_PHONE, "phone"),
        (_IPV4, "ip"),
        (_VERSION, "version"),
    ):
        for m in pattern.finditer(text):
            value = _normalize_id(m.group(), subtype)
            sentence.take(_Span(m.start(), m.end(), "id", value, None, subtype))


def _accounts(sentence: _Sentence, anchor: datetime | None) -> None:
    for m in _ACCOUNT.finditer(sentence.text):
        value = _normalize_id(m.group(), "account")
        sentence.take(_Span(m.start(), m.end(), "id", value, None, "account"))


def _normalize_id(value: str, subtype: str) -> str:
    if subtype in ("email", "uuid"):
        return value.lower()
    if subtype == "url":
        scheme, sep, rest = value.partition("://")
        if not sep:
            return value
        host, slash, path = rest.partition("/")
        return f"{scheme.lower()}://{host.lower()}{slash}{path}"
    if subtype in ("account", "phone"):
        return re.sub(r"[\s()-]", "", value)
    return value


def _scopes(sentence: _Sentence, anchor: datetime | None) -> None:
    for m in _SCOPE.finditer(sentence.text):
        if (m["res"] or m["upper"]).casefold() in _NOT_SCOPES:
            continue
        value = m.group().rstrip(".-")
        sentence.take(_Span(m.start(), m.start() + len(value), "scope", value))


def _iso_dates(sentence: _Sentence, anchor: datetime | None) -> None:
    for m in _ISO.finditer(sentence.text):
        try:
            day = date(int(m["y"]), int(m["mo"]), int(m["d"]))
        except ValueError:
            continue
        value = day.isoformat()
        if m["h"] is not None:
            value += "T" + _clock(int(m["h"]), int(m["mi"]), int(m["s"] or 0)) + _tz(m["tz"])
        sentence.take(_Span(m.start(), m.end(), "date", value))


def _dates(sentence: _Sentence, anchor: datetime | None) -> None:
    text = sentence.text
    for pattern in (_MDY, _DMY):
        for m in pattern.finditer(text):
            value = _month_day(_MONTHS[m["mo"].lower()], int(m["d"]), m["y"], anchor)
            if value is not None:
                sentence.take(_Span(m.start(), m.end(), "date", value))
    for m in _MY.finditer(text):
        sentence.take(
            _Span(m.start(), m.end(), "date", f"{int(m['y']):04d}-{_MONTHS[m['mo'].lower()]:02d}")
        )
    for m in _SLASH.finditer(text):
        year = int(m["y"]) + (2000 if len(m["y"]) == 2 else 0)
        first, second = int(m["mo"]), int(m["d"])
        if first > 12:  # month first is impossible: read it day first (15/03/2024)
            first, second = second, first
        try:
            value = date(year, first, second).isoformat()
        except ValueError:
            continue
        sentence.take(_Span(m.start(), m.end(), "date", value))
    if anchor is not None:
        _relative_dates(sentence, anchor)


def _month_day(month: int, day: int, year: str | None, anchor: datetime | None) -> str | None:
    try:
        if year is not None:
            return date(int(year), month, day).isoformat()
        if anchor is not None:
            return date(anchor.year, month, day).isoformat()
        date(2000, month, day)  # validates the day, leap years included
    except ValueError:
        return None
    return f"--{month:02d}-{day:02d}"


def _relative_dates(sentence: _Sentence, anchor: datetime) -> None:
    text = sentence.text
    today = anchor.date()
    for m in _REL_DAY.finditer(text):
        word = " ".join(m["w"].lower().split())
        shift = {"tomorrow": 1, "yesterday": -1}.get(word, 0)
        if "after tomorrow" in word:
            shift = 2
        sentence.take(
            _Span(m.start(), m.end(), "date", (today + timedelta(days=shift)).isoformat())
        )
    for m in _REL_OFFSET.finditer(text):
        count = m["n1"] or m["n2"]
        unit = (m["u1"] or m["u2"]).lower()
        n = int(count) if count.isdigit() else _WORD_NUMBERS[count.lower()]
        sign = 1 if m["n1"] else -1
        delta = relativedelta(**{unit + "s": sign * n})  # type: ignore[arg-type]
        sentence.take(_Span(m.start(), m.end(), "date", (today + delta).isoformat()))
    for m in _REL_PERIOD.finditer(text):
        sentence.take(_Span(m.start(), m.end(), "date", _period(today, m["which"], m["p"], m["e"])))
    for m in _REL_WEEKDAY.finditer(text):
        which = (m["which"] or "").lower()
        target = _WEEKDAYS[m["wd"].lower()]
        ahead = (target - today.weekday()) % 7
        if which == "last":
            ahead = ahead - 7 if ahead else -7
        elif which == "next" and ahead == 0:
            ahead = 7
        elif which in ("", "on") and ahead and _past_tense_around(sentence, m.start(), m.end()):
            ahead -= 7  # 'I went sailing on Sunday': the latest Sunday, today included
        sentence.take(
            _Span(m.start(), m.end(), "date", (today + timedelta(days=ahead)).isoformat())
        )


def _past_tense_around(sentence: _Sentence, start: int, end: int) -> bool:
    """Does the clause around a weekday speak of the past, and not of a target date?

    Past: a past form ('went', 'was') or an '-ed' verb not after 'is'/'will'/...;
    not when the clause also speaks of the future ('will', "'ll", 'next') or the
    weekday is a target ('for Friday', 'to Monday', 'until Friday').
    """
    text = sentence.text
    clause_start, clause_end = sentence.clause_of(start)
    lo, hi = max(clause_start, start - _TENSE_WINDOW), min(clause_end, end + _TENSE_WINDOW)
    if _WEEKDAY_TARGET.search(text, max(lo, start - 10), start):
        return False
    return _told_in_past(text, lo, hi)


def _period(today: date, which: str | None, period: str | None, end: str | None) -> str:
    if end:
        end = end.lower()
        if end == "week":
            return (today + timedelta(days=6 - today.weekday())).isoformat()
        if end == "month":
            return date(
                today.year, today.month, calendar.monthrange(today.year, today.month)[1]
            ).isoformat()
        return date(today.year, 12, 31).isoformat()
    shift = {"next": 1, "this": 0, "last": -1}[(which or "this").lower()]
    period = (period or "").lower()
    if period == "week":
        year, week, _ = (today + timedelta(weeks=shift)).isocalendar()
        return f"{year:04d}-W{week:02d}"
    if period == "month":
        first = date(today.year, today.month, 1) + relativedelta(months=shift)
        return f"{first.year:04d}-{first.month:02d}"
    return f"{today.year + shift:04d}"


def _times(sentence: _Sentence, anchor: datetime | None) -> None:
    text = sentence.text
    found: list[_Span] = []
    for m in _TIME.finditer(text):
        hour, minute = _hour(int(m["h"]), m["ampm"]), int(m["mi"])
        if hour is None or minute > 59:
            continue
        found.append(
            _Span(m.start(), m.end(), "date", _clock(hour, minute, int(m["s"] or 0)) + _tz(m["tz"]))
        )
    for m in _TIME_AMPM.finditer(text):
        hour = _hour(int(m["h"]), m["ampm"])
        if hour is not None:
            found.append(_Span(m.start(), m.end(), "date", _clock(hour, 0, 0) + _tz(m["tz"])))
    for m in _TIME_WORD.finditer(text):
        value = "00:00" if m["w"].lower() == "midnight" else "12:00"
        found.append(_Span(m.start(), m.end(), "date", value))
    for span in sorted(found, key=lambda s: s.start):
        if not sentence.free(span.start, span.end):
            continue
        day = _date_before(sentence, span.start)
        if day is not None:  # 'March 5 at 14:30' is one date-time
            del sentence.day_ends[day.end]
            day.value = f"{day.value}T{span.value}"
            sentence.claim(day.end, span.end)
            day.end = span.end
            continue
        sentence.take(span)


def _date_before(sentence: _Sentence, start: int) -> _Span | None:
    """The ISO-day date a time directly follows ('March 5, 2024 at 14:00'), if any.

    The gap is short by definition, so only the last few offsets are looked up.
    """
    for end in range(start, max(-1, start - _DATETIME_GAP_LIMIT), -1):
        day = sentence.day_ends.get(end)
        if day is not None and _DATETIME_GAP.match(sentence.text[end:start]):
            return day
    return None


def _hour(hour: int, ampm: str | None) -> int | None:
    if ampm:
        if not 1 <= hour <= 12:
            return None
        pm = ampm.lower().startswith("p")
        return (hour % 12) + (12 if pm else 0)
    return hour if hour <= 23 else None


def _clock(hour: int, minute: int, second: int) -> str:
    return f"{hour:02d}:{minute:02d}" + (f":{second:02d}" if second else "")


def _tz(tz: str | None) -> str:
    if not tz:
        return ""
    if tz.upper() == "Z":
        return "Z"
    if tz[0] in "+-":
        return tz if ":" in tz else f"{tz[:3]}:{tz[3:]}"
    return " " + tz.upper()


def _money(sentence: _Sentence, anchor: datetime | None) -> None:
    for m in _AMBIGUOUS_MONEY.finditer(sentence.text):  # '¥600': yen or yuan?
        sentence.take(_verbatim_span(sentence, m.start(), m.end(), "money"))
    for pattern in (_MONEY_PRE, _MONEY_POST):
        for m in pattern.finditer(sentence.text):
            cur = m["cur"]
            code = CURRENCY_SYMBOLS.get(cur) or (cur if cur in CURRENCY_CODES else None)
            code = code or CURRENCY_WORDS.get(cur.lower())
            if code is None:
                continue
            if _DOT_GROUPS.fullmatch(m["num"]):  # '€1.250': 1250 or 1.25?
                sentence.take(_verbatim_span(sentence, m.start(), m.end(), "money"))
                continue
            amount = _amount(m["num"], m["scale"])
            sentence.take(_Span(m.start(), m.end(), "money", amount, code))


def _verbatim_span(sentence: _Sentence, start: int, end: int, kind: str) -> _Span:
    """An amount kept as written (value = the text, unit None): it has two readings."""
    return _Span(start, end, kind, _verbatim(sentence.text[start:end]))


def _verbatim_quantities(sentence: _Sentence, anchor: datetime | None) -> None:
    """Paces ('5:30 per km', not a time of day) and decimal commas ('2,5 m'), as written."""
    text = sentence.text
    for m in _PACE.finditer(text):
        sentence.take(_verbatim_span(sentence, m.start(), m.end(), "number"))
    for m in _DECIMAL_COMMA.finditer(text):
        if not sentence.free(m.start(), m.end()):
            continue
        _, end = _unit_at(text, m.end())
        sentence.take(_verbatim_span(sentence, m.start(), end, "number"))


def _amount(num: str, scale: str | None) -> int | float:
    value = number_value(num)
    if scale:
        value = scaled(value, _SCALES[scale.strip()])
    return value


def _numbers(sentence: _Sentence, anchor: datetime | None) -> None:
    text = sentence.text
    for m in _NUMBER.finditer(text):
        if not sentence.free(m.start(), m.end()):
            continue
        end = m.end()
        unit, unit_end = _unit_at(text, end)
        if unit is None and end < len(text) and (text[end].isalpha() or text[end] in "°'’"):
            continue  # '3rd', '2FA', "90's": not a quantity
        if unit == "second" and text[end:unit_end] == "s" and len(m["num"]) == 4:
            continue  # '1990s' is a decade
        if _ambiguous_number(m, text[end:unit_end].strip(" \u00a0-")):
            stop = unit_end if unit else end
            sentence.take(_verbatim_span(sentence, m.start(), stop, "number"))
            continue
        value = _amount(m["num"], m["scale"])
        if m["sign"]:
            value = -value
        second: _Span | None = None
        if unit is None:
            unit, second = _range_unit(sentence, end)
        noun = "" if unit else _noun_after(text, end)
        sentence.take(
            _Span(
                m.start(),
                unit_end if unit and not second else end,
                "number",
                value,
                unit,
                noun=noun,
            )
        )
        if second is not None:
            sentence.take(second)


def _ambiguous_number(m: re.Match[str], unit_text: str) -> bool:
    """'10k' (10,000 or 10 km?), '2B' (bytes or billion?), '20 pounds' (mass or money?),
    '1.250.000' (dot-grouped thousands)."""
    scale = (m["scale"] or "").strip()
    return (
        scale in ("k", "K")
        or unit_text in AMBIGUOUS_UNIT_SPELLINGS
        or unit_text.casefold() in AMBIGUOUS_UNIT_SPELLINGS
        or (_DOT_GROUPS.fullmatch(m["num"]) is not None and m["num"].count(".") > 1)
    )


def _unit_at(text: str, end: int) -> tuple[str | None, int]:
    m = _UNIT_AT.match(text, end, end + _UNIT_WINDOW)
    if m is None:
        return None, end
    word = m.group(1)
    return UNIT_SYMBOLS.get(word) or UNIT_WORDS.get(word.lower()), m.end()


def _range_unit(sentence: _Sentence, end: int) -> tuple[str | None, _Span | None]:
    """'5-10 km' and '5 to 10 km': the first number takes the second one's unit."""
    text = sentence.text
    m = _RANGE_TAIL.match(text, end, end + _LOOKAHEAD)
    if m is None:
        return None, None
    unit, unit_end = _unit_at(text, m.end())
    if unit is None:
        return None, None
    value = _amount(m["num"], None)
    return unit, _Span(m.start("num"), unit_end, "number", value, unit)


def _noun_after(text: str, end: int) -> str:
    start = end + 1 if text[end : end + 1] == " " else end
    m = _WORD.match(text, start, start + _LOOKAHEAD)
    if m is None:
        return ""
    word = m.group().casefold()
    return "" if word in _STOPWORDS or word.isdigit() else word


_RECOGNISERS = (
    _ids,
    _dates,
    _accounts,
    _scopes,
    _verbatim_quantities,
    _times,
    _money,
    _numbers,
)
