"""Compiled patterns and word lists of the extractor, built once at import.

Case-folded word lists are frozensets; patterns read a bounded window where they
look ahead, so the work per value stays constant (see docs/extraction.md).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable

from memlineage.meaning.values import (
    AMBIGUOUS_CURRENCY_SYMBOLS,
    CURRENCY_CODES,
    CURRENCY_SYMBOLS,
    CURRENCY_WORDS,
    UNIT_SYMBOLS,
    UNIT_WORDS,
)

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?:\.\d{3}){2,}(?![\d.])|\d+(?:\.\d+)?"
SCALES: dict[str, int] = {
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


UNIT_AT = re.compile(r"[ \u00a0-]?(" + _unit_pattern() + ")")
# Anchored look-aheads read a bounded window, so the work per value is constant:
# the longest unit spelling plus its separator and the character after it.
UNIT_WINDOW = max(len(a) for a in (*UNIT_SYMBOLS, *UNIT_WORDS)) + 3
LOOKAHEAD = 48
_CUR_SYMBOL = "|".join(re.escape(s) for s in sorted(CURRENCY_SYMBOLS, key=len, reverse=True))
_CUR_CODE = "|".join(sorted(CURRENCY_CODES))
_CUR_WORD = "|".join(re.escape(w) for w in sorted(CURRENCY_WORDS, key=len, reverse=True))
MONEY_PRE = re.compile(
    rf"(?<![\w$])(?P<cur>{_CUR_SYMBOL}|\b(?:{_CUR_CODE})\b)\s?(?P<num>{_NUM})(?P<scale>{_MONEY_SCALE})?"
)
AMBIGUOUS_MONEY = re.compile(
    "(?<![\\w$])(?:"
    + "|".join(re.escape(s) for s in AMBIGUOUS_CURRENCY_SYMBOLS)
    + rf")\s?(?:{_NUM})(?:{_MONEY_SCALE})?"
)
# '1.250' (1250 or 1.25?) and '2,5' (2.5 written with a decimal comma)
DOT_GROUPS = re.compile(r"\d{1,3}(?:\.\d{3})+")
DECIMAL_COMMA = re.compile(r"(?<![\w.,])\d+,\d{1,2}(?![\d,.])")
PACE = re.compile(
    r"(?<![\w:.])\d{1,2}:\d{2}\s?(?:min(?:utes)?\s?)?(?:/\s?|per\s+)"
    r"(?:km|kilomet(?:er|re)|mi|mile|k|100\s?m|lap)\b",
    re.IGNORECASE,
)
MONEY_POST = re.compile(
    rf"(?<![\w.,])(?P<num>{_NUM})(?P<scale>{_MONEY_SCALE})?\s?"
    rf"(?P<cur>(?:{_CUR_CODE})\b|(?i:{_CUR_WORD})\b|€|£)"
)
NUMBER = re.compile(rf"(?<![\w.,/#:$€£¥@-])(?P<sign>-)?(?P<num>{_NUM})(?P<scale>{_NUMBER_SCALE})?")
RANGE_TAIL = re.compile(rf"\s*(?:-|–|to|and)\s*(?P<num>{_NUM})")

# entity ids, in priority order
URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'`]+", re.IGNORECASE)
EMAIL = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
TICKET = re.compile(r"\b[A-Z][A-Z0-9]{0,9}-\d+\b")
IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b")
PHONE = re.compile(r"(?<![\w+])\+\d{1,3}(?:[ -]?\(?\d{1,4}\)?){2,5}\d(?![\w-])")
IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")
VERSION = re.compile(r"\bv\d+(?:\.\d+)+\b")
ACCOUNT = re.compile(r"(?<![\w.,/:#-])(?:#\d+|\d{6,}|\d{3,4}(?:[ -]\d{3,4}){2,})(?![\w/:-]|[.,]\d)")
# lower case ('read:billing') or upper case ('READ:BILLING'), never mixed ('Re:Meeting');
# an upper-case resource has 3 letters or more, so a name like 'CS:GO' is not a scope
SCOPE = re.compile(
    r"(?<![\w/:.@-])(?:"
    r"(?P<res>[a-z][a-z_]*(?:\.[a-z_]+)*):[a-z*][a-z0-9_*.-]*(?::[a-z0-9_*.-]+)*"
    r"|(?P<upper>[A-Z][A-Z_]{2,}(?:\.[A-Z_]+)*):[A-Z*][A-Z0-9_*.-]*(?::[A-Z0-9_*.-]+)*"
    r")(?![\w/:@])"
)
NOT_SCOPES = frozenset(
    {"http", "https", "mailto", "ftp", "file", "urn", "data", "tel", "ssh", "git"}
)

# dates and times
MONTHS: dict[str, int] = {}
for _i, _name in enumerate(calendar.month_name):
    if _i:
        MONTHS[_name.lower()] = _i
        MONTHS[_name[:3].lower()] = _i
MONTHS["sept"] = 9
_MONTH = r"(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")"
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
_WEEKDAY = r"(?:" + "|".join(WEEKDAYS) + r")"
_TZ = (
    r"(?:UTC|GMT|CET|CEST|EET|EEST|WET|BST|IST|JST|KST|AEST|AEDT|EST|EDT|CST|CDT|MST|MDT"
    r"|PST|PDT|Z|[+-]\d{2}:?\d{2})"
)
ISO = re.compile(
    r"\b(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})"
    r"(?:[T ](?P<h>\d{2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:\.\d+)?)?"
    r"(?P<tz>Z|[+-]\d{2}:?\d{2})?)?(?![\w-])"
)
MDY = re.compile(
    rf"\b(?P<mo>{_MONTH})\.?\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(?P<y>\d{{4}})\b)?",
    re.IGNORECASE,
)
DMY = re.compile(
    rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<mo>{_MONTH})\b\.?(?:,?\s+(?P<y>\d{{4}})\b)?",
    re.IGNORECASE,
)
MY = re.compile(rf"\b(?P<mo>{_MONTH})\s+(?P<y>\d{{4}})\b", re.IGNORECASE)
SLASH = re.compile(r"(?<![\w/])(?P<mo>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4}|\d{2})(?![\w/])")
REL_DAY = re.compile(
    r"\b(?P<w>(?:the\s+)?day\s+after\s+tomorrow|today|tonight|tomorrow|yesterday|end\s+of\s+(?:the\s+)?day|eod)\b",
    re.IGNORECASE,
)
REL_WEEKDAY = re.compile(
    rf"\b(?:(?P<which>next|this|last|coming|on)\s+)?(?P<wd>{_WEEKDAY})\b", re.IGNORECASE
)
REL_PERIOD = re.compile(
    r"\b(?:(?P<which>next|this|last)\s+(?P<p>week|month|year)"
    r"|end\s+of\s+(?:the\s+)?(?P<e>week|month|year))\b",
    re.IGNORECASE,
)
_COUNT = r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
REL_OFFSET = re.compile(
    rf"\b(?:in\s+(?P<n1>{_COUNT})\s+(?P<u1>day|week|month|year)s?"
    rf"|(?P<n2>{_COUNT})\s+(?P<u2>day|week|month|year)s?\s+ago)\b",
    re.IGNORECASE,
)
TIME = re.compile(
    rf"(?<![\w:.])(?P<h>\d{{1,2}}):(?P<mi>\d{{2}})(?::(?P<s>\d{{2}}))?(?![\d:])"
    rf"(?:\s?(?P<ampm>[ap]\.?m\.?)(?![a-z]))?(?:\s?(?P<tz>{_TZ})\b)?",
    re.IGNORECASE,
)
TIME_AMPM = re.compile(
    rf"(?<![\w:.])(?P<h>\d{{1,2}})\s?(?P<ampm>[ap]\.?m\.?)(?![a-z])(?:\s?(?P<tz>{_TZ})\b)?",
    re.IGNORECASE,
)
TIME_WORD = re.compile(r"\b(?P<w>noon|midday|midnight)\b", re.IGNORECASE)
DATETIME_GAP = re.compile(r"\s*(?:,|at|@|,\s*at)?\s*$", re.IGNORECASE)
DATETIME_GAP_LIMIT = 12
# Gates, checked before a family of patterns is scanned: literals every match of the
# family holds (in ``folded`` text for an IGNORECASE family), so a text that holds none
# of them cannot match it, and the gate (a few substring tests) is much cheaper than the
# scan. Most chat sentences hold no digit, no '@', no ':' and none of these words.
#: REL_DAY, REL_OFFSET, REL_PERIOD and REL_WEEKDAY (every weekday ends in 'day')
RELATIVE_HINTS = ("day", "week", "month", "year", "tonight", "tomorrow", "eod")
#: URL: 'http://', 'https://' or 'www.'
URL_HINTS = ("://", "www.")
#: TIME_WORD: noon, midday, midnight
TIME_WORD_HINTS = ("noon", "mid")
#: SCOPE: a colon before a letter or '*', in either of its (ASCII) cases
SCOPE_HINT = re.compile(r":[A-Za-z*]")
WORD_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip

# sentences and clauses
# A sentence may end after . ! ? and whitespace (sentences.sentence_spans decides which
# candidates end one), and always ends at a newline.
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
# What may follow a sentence's end in any case: a capital, a digit, a quote or a bracket.
SENTENCE_START = re.compile(r"[A-Z0-9\"'(\[]")
# A period that ends an abbreviation or an initial, not a sentence ("Dr. Patel",
# "e.g. tea", "U.S. rules"), or an ellipsis ("well... maybe").
ABBREVIATION = re.compile(
    r"(?:\b(?:Dr|Mr|Mrs|Ms|Mx|Prof|St|Sr|Jr|Mt|Ft|Ave|Rd|No|Nos|Vol|Fig|vs|etc|approx|incl|"
    r"Inc|Ltd|Co|Corp|cf|ca|al)|\b[A-Za-z]|\b(?:e\.g|i\.e|a\.m|p\.m)|\.\.)\.$"
)
# Past this many characters a sentence is read in windows cut at whitespace (hostile
# or pasted text without punctuation): the cost of a sentence stays bounded.
MAX_SENTENCE_CHARS = 1_000
CLAUSE = re.compile(
    r"\s*;\s*|,?\s+(?:but|however|whereas|although|though|while)\s+|\s+however,?\s+"
    r"|,?\s+(?:and|or)\s+(?=(?:always|never|must|should|shall|only|do\s+not|don't|please|"
    r"we|i|you|they|he|she|it)\b)",
    re.IGNORECASE,
)
#: CLAUSE splits at ';' or at a word between whitespace: in a text whose only whitespace is
#: ' ' (no OTHER_SPACE), every split but ';' holds one of these, spaces included
CLAUSE_HINTS = (
    " but ", " however", " whereas ", " although ", " though ", " while ", " and ", " or ",
)  # fmt: skip
OTHER_SPACE = re.compile(r"[^\S ]")
WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")

# negation, constraints, preferences, decisions (over case-folded clause text)
LIMIT_IDIOMS = re.compile(
    r"\b(?:no|not)\s+(?:more|less|fewer|later|earlier|longer)\s+than\b|\bnot\s+only\b"
    r"|\bno\s+matter\b|\bnot\s+to\s+exceed\b",
    re.IGNORECASE,
)
NO_LONGER = re.compile(r"\bno\s+longer\b|\bnot\s+anymore\b", re.IGNORECASE)
INTERJECTION_NO = re.compile(r"\s*no\s*[,!.]", re.IGNORECASE)
#: LIMIT_IDIOMS, NO_LONGER and INTERJECTION_NO all hold 'no' (as ``folded`` reads a text)
NO_HINT = "no"
ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
NEGATORS = frozenset(
    {"not", "no", "never", "none", "nobody", "nothing", "nowhere", "neither", "nor",
     "without", "cannot", "nope"}
)  # fmt: skip
NEG_IMPLICATIVE = frozenset(
    {"unwilling", "unable", "unlikely", "unhappy", "unaware", "uninterested", "unacceptable",
     "unavailable", "unnecessary", "unsafe", "impossible", "incapable", "dislike", "dislikes",
     "disliked", "disagree", "disagrees", "disagreed", "fail", "fails", "failed", "failing",
     "refuse", "refuses", "refused", "forget", "forgets", "forgot", "neglect", "neglects",
     "neglected", "lack", "lacks", "lacked", "lacking", "avoid", "avoids", "avoided"}
)  # fmt: skip
NEEDS_TO = frozenset({"fail", "fails", "failed", "failing", "forget", "forgets", "forgot"})
SCOPE_DENIERS = frozenset(
    {"revoke", "revoked", "revokes", "remove", "removed", "removes", "deny", "denied", "denies",
     "drop", "dropped", "drops", "strip", "stripped", "lose", "lost", "withdraw", "withdrawn",
     "withdrew"}
)  # fmt: skip
CONSTRAINT = re.compile(
    r"\b(?:must|mustn't|shall|shan't|should|shouldn't|ought\s+to|always|only|at\s+most|at\s+least"
    r"|no\s+(?:more|less|fewer|later|earlier)\s+than|not\s+(?:more|less|later|earlier)\s+than"
    r"|not\s+to\s+exceed|(?:do|does|must|should|may|can)\s+not\s+exceed|exceed|maximum|minimum"
    r"|max|limit|limits|limited|capped|required|requires?|mandatory|forbidden|prohibited"
    r"|not\s+(?:allowed|permitted)|(?:is|are)\s+(?:allowed|permitted)|may\s+not|have\s+to|has\s+to"
    r"|needs?\s+to|deadline)\b"
    r"|\b(?:under|over|below|above|within|less\s+than|more\s+than|fewer\s+than|up\s+to|exceeds?)"
    r"\s+[$€£¥]?\d"
)
#: every alternative of CONSTRAINT but those that end in a digit holds one of these
#: (CONSTRAINT reads case-folded clauses, so the gate reads the same text)
CONSTRAINT_HINTS = (
    "must", "shall", "shan't", "should", "ought", "always", "only", "most", "least", "than",
    "exceed", "max", "minimum", "limit", "capped", "require", "mandatory", "forbidden",
    "prohibited", "allowed", "permitted", "may", "have", "has", "need", "deadline",
)  # fmt: skip
IMPERATIVE = re.compile(r"^(?:please\s+)?(?:never|don't|do\s+not|don’t)\b")
TEMPORAL_LIMIT = re.compile(
    r"\b(?P<word>before|after|by|until|till|no\s+later\s+than|no\s+earlier\s+than"
    r"|not\s+before|not\s+after|due)\s+(?:the\s+|end\s+of\s+)?$",
    re.IGNORECASE,
)
PREFERENCE = re.compile(
    r"\b(?:prefer|prefers|preferred|preference|preferences|favou?rite|would\s+rather|wants?"
    r"|wish(?:es)?|likes|loves|hates|enjoys)\b"
    r"|\b(?:i|we|you|they|he|she|really|also|still)\s+(?:like|love|hate|enjoy)\b"
)
#: every alternative of PREFERENCE holds one of these
PREFERENCE_HINTS = (
    "prefer", "favorite", "favourite", "rather", "want", "wish", "like", "love", "hate", "enjoy",
)  # fmt: skip
#: every alternative of DECISION holds one of these
DECISION_HINTS = (
    "decide", "decision", "agreed", "chose", "choose", "going", "settled", "use", "switch",
    "approved", "selected", "picked", "opted",
)  # fmt: skip
DECISION = re.compile(
    r"\b(?:decided|decide|decides|decision|agreed|chose|chosen|choose|going\s+with|settled\s+on"
    r"|will\s+use|we'll\s+use|switch(?:ed)?\s+to|approved|selected|picked|opted)\b"
)
#: every alternative of OPEN_MARKERS holds one of these, as ``folded`` reads a text
OPEN_HINTS = (
    "todo", "tbd", "fixme", "to-do", "still", "question", "follow", "action", "pending", "yet",
    "remind", "done", "finished", "resolved", "decided", "outstanding",
)  # fmt: skip
OPEN_MARKERS = re.compile(
    r"\b(?:TODO|TBD|FIXME)\b|\bto-?do:|\bstill\s+(?:need|needs|have|has)\s+to\b|\bopen\s+question"
    r"|\bfollow[\s-]?up\b|\baction\s+item|\bpending\b|\byet\s+to\b"
    # A request ("Remind me to call", "can you remind me to"), not what reminds the writer
    # ("moments like these remind me to appreciate ...", "... to remind me.").
    r"|(?:^|[.!?:]\s+|\bplease\s+|\b(?:can|could|would|will)\s+you\s+(?:please\s+)?"
    r"|\byou\s+to\s+)remind\s+me\b(?!\s+(?:of|why|how|that|what|when|so|just)\b)(?![.!])"
    r"|\bnot\s+(?:yet\s+)?(?:done|finished|resolved|decided)\b|\bunresolved\b|\boutstanding\b",
    re.IGNORECASE,
)
# "how much work we still have to do", "how far we still have to go": what remains,
# measured in wonder, neither a task anyone took on nor a rule. One sentence.
_MEASURE = r"\bhow\s+(?:much|many|far|long)\b[^.!?]*"
#: a measure ending where an open-item marker starts (searched with that end)
MEASURED_REMAINDER = re.compile(_MEASURE + "$", re.IGNORECASE)
#: a measure whose "have to" tells what remains, not what is required (binding.py)
MEASURED_OBLIGATION = re.compile(_MEASURE + r"\b(?:have|has|need|needs)\s+to\b", re.IGNORECASE)


def folded(text: str) -> str:
    """``text`` as literal gates read it: case-folded, 'İ' and 'ı' read as 'i'.

    An IGNORECASE pattern matches a character to a lower-case ASCII letter only when
    the character's casefold() is that letter, save for these two, so a lower-case
    literal that every match of such a pattern holds is a substring of ``folded(text)``
    wherever the pattern matches ``text``: a text without it cannot match.
    """
    return text.replace("İ", "i").replace("ı", "i").casefold()


def holds_any(text: str, literals: Iterable[str]) -> bool:
    """Whether ``text`` holds one of ``literals`` (a loop: any() of a generator is slower)."""
    for literal in literals:  # noqa: SIM110
        if literal in text:
            return True
    return False


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _words(
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
TRIGGER_WORDS = NEGATORS | _words(
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
# ``_states_no_rule``; the keyword is then blanked from the text CONSTRAINT reads.
#: 'must have' + a participle, 'must be' + a feeling: a guess, not an obligation
PARTICIPLES = _words("seen taken gone known done given gotten become grown shown")
FEELINGS = _words(
    """
    proud thrilled thrilling excited exciting exhausted exhausting tired tiring relieved
    relief amazing awesome great nice lovely wonderful incredible fun hard tough difficult
    scary nervous stressful overwhelming heartbreaking devastating rewarding frustrating
    lonely sad happy crazy dream blast nightmare
    """
)
#: 'must be so ...', 'must be such ...': an exclamation; other degree words need a feeling
#: ('must be very careful' stays a rule)
EXCLAIM = _words("so such")
GUESS_DEGREE = _words("really very quite pretty super incredibly absolutely truly")
HAVE = _words("have has had i've we've you've they've")
BE_NOW = _words("am is are be being i'm we're you're they're he's she's it's that's")
BE_PAST = _words("was were")
#: 'the game only requires a controller': how little it takes, not a rule
#: ('the venue only takes cash' is one, so 'takes' is not here)
ONLY_TAKES = _words("require requires")
#: what may follow a past verb ('only started running', 'only wanted to'), never a noun
AFTER_VERB = _words(
    """
    to a an the his her their my our your its it him them me us this that some last
    yesterday recently when after before in on at for with once back up out
    """
)
#: before 'required' as an adjective or passive ('is required', 'the required forms')
BEFORE_REQUIRED = _words(
    "is are am was were be been being not no the a an any all if as when where unless also"
)
#: after 'required' as a rule ('required to', 'required by law', 'required for entry')
AFTER_REQUIRED = _words(
    """
    to by for in on at every within before after from of under unless if when and or but
    """
)
#: a capitalised keyword that opens a sentence is a name unless a number follows
NAME_KEYWORDS = _words("max")
#: 'Max' mid-sentence: capital then lower case, after a word or a comma
TITLE_CASE = re.compile(r"[A-Z][a-z]+")
DIGIT = re.compile(r"\d")

# value polarity: what may stand between a negation and the value it governs
GAP_LIMIT = 60
GAP_PUNCT = re.compile(r"[,;:()\[\]\"]")
BRIDGE_WORDS = _words(
    """
    a an the on at in for of to be been being is are was were am exactly really quite just
    even ever that this these those my our your his her their its me you him us them it
    any about around
    """
)
VALUE_VERBS = _words(
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
DENY_AFTER = _words(
    """
    withdrawn revoked removed denied refused dropped rejected disabled blocked pulled
    suspended cancelled canceled taken
    """
)
AFTER_DENIAL = re.compile(
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
PAST_FORMS = _words(
    """
    was were did had went came saw got met made took gave told said spent left ran ate drank
    bought paid sent found thought felt kept lost won flew drove rode swam wrote began forgot
    heard sold sat stood slept caught brought taught fought built held knew grew threw wore
    broke spoke chose fell woke hung led lent meant sang sank hid fed fled dug stuck struck
    swung understood wasn't weren't didn't hadn't
    """
)
NOT_PAST_ED = _words(
    """
    need feed seed speed indeed bed red shed hundred proceed succeed exceed embed weed breed
    bleed sacred naked wicked shared
    """
)
PASSIVE_AUX = _words("am is are be being will i'm we're you're they're he's she's it's get gets")
FUTURE = re.compile(
    r"\b(?:will|shall|going\s+to|gonna|plan(?:s|ning)?\s+to|next|tomorrow|upcoming)\b|'ll\b",
    re.IGNORECASE,
)
WEEKDAY_TARGET = re.compile(r"\b(?:for|to|until|till|by|before|from|every|each)\s*$", re.IGNORECASE)
TENSE_WINDOW = 100

# preferences: subjects, the words that may stand between a subject and its predicate
SUBJECTS = _words("i we you they he she")
PLAIN_SUBJECTS = _words("i we you they")
SUBJECT_BE = _words("i'm we're you're they're he's she's")
POSSESSIVES = _words("my our your his her their")
BE = _words("am is are was were be")
PRE_VERB = _words(
    """
    really truly absolutely totally just still also now genuinely honestly simply actually
    definitely do does would so deeply secretly always kind sort of quite very much
    """
)
DEGREE = _words("so very really quite severely deathly extremely a bit little rather pretty")
# lexicon words after a subject that are not attitudes towards something
NOT_ATTITUDES = _words(
    """
    hurt kill fail lose miss worry doubt cry suffer die win agree thank thanks help please
    pray fight attack argue hope apologize apologise promise like's sorry well fine
    struggle share stress problem cause support encourage
    """
)
