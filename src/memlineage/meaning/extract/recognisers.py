"""Recognisers of ids, scopes, dates, times, amounts and numbers, in priority order.

Each one claims character spans in a sentence, so an email address is never also
read as a number and a date is never also read as an account number.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from datetime import date, timedelta

from dateutil.relativedelta import relativedelta

from memlineage.meaning.extract.clauses import told_in_past
from memlineage.meaning.extract.patterns import (
    ACCOUNT,
    AMBIGUOUS_MONEY,
    DATETIME_GAP,
    DATETIME_GAP_LIMIT,
    DECIMAL_COMMA,
    DMY,
    DOT_GROUPS,
    EMAIL,
    IBAN,
    IPV4,
    ISO,
    LOOKAHEAD,
    MDY,
    MONEY_POST,
    MONEY_PRE,
    MONTHS,
    MY,
    NOT_SCOPES,
    NUMBER,
    PACE,
    PHONE,
    RANGE_TAIL,
    REL_DAY,
    REL_OFFSET,
    REL_PERIOD,
    REL_WEEKDAY,
    RELATIVE_HINTS,
    SCALES,
    SCOPE,
    SCOPE_HINT,
    SLASH,
    STOPWORDS,
    TENSE_WINDOW,
    TICKET,
    TIME,
    TIME_AMPM,
    TIME_WORD,
    TIME_WORD_HINTS,
    UNIT_AT,
    UNIT_WINDOW,
    URL,
    URL_HINTS,
    UUID,
    VERSION,
    WEEKDAY_TARGET,
    WEEKDAYS,
    WORD,
    WORD_NUMBERS,
    holds_any,
)
from memlineage.meaning.extract.sentences import Sentence, Span, split_sentences, verbatim
from memlineage.meaning.values import (
    AMBIGUOUS_UNIT_SPELLINGS,
    CURRENCY_CODES,
    CURRENCY_SYMBOLS,
    CURRENCY_WORDS,
    UNIT_SYMBOLS,
    UNIT_WORDS,
    number_value,
    scaled,
)
from memlineage.model import FactValue


def recognised(text: str, today: date | None) -> Sentence:
    """The spans of a sentence; relative dates resolve against ``today``, the writer's
    local day (when known): nothing else of a stamp is read."""
    sentence = Sentence(text)
    for recognise in _recognisers_for(sentence, today):
        recognise(sentence, today)
    sentence.finish()
    return sentence


def text_values(text: str) -> list[tuple[FactValue, str | None, str]]:
    """(value, unit, surface) of every number, amount and absolute date in a text.

    The gate reads a summary with it; relative dates have no anchor there and are skipped.
    """
    found: list[tuple[FactValue, str | None, str]] = []
    for part in split_sentences(text):
        sentence = recognised(part, None)
        for span in sentence.spans:
            if span.kind in ("number", "money", "date"):
                found.append((span.value, span.unit, part[span.start : span.end]))
    return found


def _ids(sentence: Sentence, today: date | None) -> None:
    text = sentence.text
    for pattern, subtype, possible in (
        (URL, "url", holds_any(sentence.folded, URL_HINTS)),
        (EMAIL, "email", "@" in text),
        (UUID, "uuid", "-" in text),  # 8-4-4-4-12 hex digits, maybe letters only
    ):
        if not possible:
            continue
        for m in pattern.finditer(text):
            value = m.group()
            if subtype == "url":
                value = value.rstrip(".,;:!?)]}")
            end = m.start() + len(value)
            sentence.take(Span(m.start(), end, "id", _normalize_id(value, subtype), None, subtype))
    if not sentence.has_digit:
        return  # ISO dates, tickets, IBANs, phones, IPs and versions all hold a digit
    _iso_dates(sentence, today)  # before tickets and accounts: 2024-03-05 is a date
    for pattern, subtype in (
        (TICKET, "ticket"),
        (IBAN, "account"),
        (PHONE, "phone"),
        (IPV4, "ip"),
        (VERSION, "version"),
    ):
        for m in pattern.finditer(text):
            value = _normalize_id(m.group(), subtype)
            sentence.take(Span(m.start(), m.end(), "id", value, None, subtype))


def _accounts(sentence: Sentence, today: date | None) -> None:
    if not sentence.has_digit:
        return
    for m in ACCOUNT.finditer(sentence.text):
        value = _normalize_id(m.group(), "account")
        sentence.take(Span(m.start(), m.end(), "id", value, None, "account"))


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


def _scopes(sentence: Sentence, today: date | None) -> None:
    if ":" not in sentence.text or SCOPE_HINT.search(sentence.text) is None:
        return
    for m in SCOPE.finditer(sentence.text):
        if (m["res"] or m["upper"]).casefold() in NOT_SCOPES:
            continue
        value = m.group().rstrip(".-")
        sentence.take(Span(m.start(), m.start() + len(value), "scope", value))


def _iso_dates(sentence: Sentence, today: date | None) -> None:
    for m in ISO.finditer(sentence.text):
        try:
            day = date(int(m["y"]), int(m["mo"]), int(m["d"]))
        except ValueError:
            continue
        value = day.isoformat()
        if m["h"] is not None:
            value += "T" + _clock(int(m["h"]), int(m["mi"]), int(m["s"] or 0)) + _tz(m["tz"])
        sentence.take(Span(m.start(), m.end(), "date", value))


def _dates(sentence: Sentence, today: date | None) -> None:
    if sentence.has_digit:
        _absolute_dates(sentence, today)
    if today is not None and holds_any(sentence.folded, RELATIVE_HINTS):
        _relative_dates(sentence, today)


def _absolute_dates(sentence: Sentence, today: date | None) -> None:
    """Month-day, day-month, month-year and slashed dates: each holds a digit."""
    text = sentence.text
    for pattern in (MDY, DMY):
        for m in pattern.finditer(text):
            value = _month_day(MONTHS[m["mo"].lower()], int(m["d"]), m["y"], today)
            if value is not None:
                sentence.take(Span(m.start(), m.end(), "date", value))
    for m in MY.finditer(text):
        sentence.take(
            Span(m.start(), m.end(), "date", f"{int(m['y']):04d}-{MONTHS[m['mo'].lower()]:02d}")
        )
    for m in SLASH.finditer(text):
        year = int(m["y"]) + (2000 if len(m["y"]) == 2 else 0)
        first, second = int(m["mo"]), int(m["d"])
        if first > 12:  # month first is impossible: read it day first (15/03/2024)
            first, second = second, first
        try:
            value = date(year, first, second).isoformat()
        except ValueError:
            continue
        sentence.take(Span(m.start(), m.end(), "date", value))


def _month_day(month: int, day: int, year: str | None, today: date | None) -> str | None:
    try:
        if year is not None:
            return date(int(year), month, day).isoformat()
        if today is not None:
            return date(today.year, month, day).isoformat()
        date(2000, month, day)  # validates the day, leap years included
    except ValueError:
        return None
    return f"--{month:02d}-{day:02d}"


def _relative_dates(sentence: Sentence, today: date) -> None:
    text = sentence.text
    for m in REL_DAY.finditer(text):
        word = " ".join(m["w"].lower().split())
        shift = {"tomorrow": 1, "yesterday": -1}.get(word, 0)
        if "after tomorrow" in word:
            shift = 2
        sentence.take(Span(m.start(), m.end(), "date", (today + timedelta(days=shift)).isoformat()))
    for m in REL_OFFSET.finditer(text):
        count = m["n1"] or m["n2"]
        unit = (m["u1"] or m["u2"]).lower()
        n = int(count) if count.isdigit() else WORD_NUMBERS[count.lower()]
        sign = 1 if m["n1"] else -1
        delta = relativedelta(**{unit + "s": sign * n})  # type: ignore[arg-type]
        sentence.take(Span(m.start(), m.end(), "date", (today + delta).isoformat()))
    for m in REL_PERIOD.finditer(text):
        sentence.take(Span(m.start(), m.end(), "date", _period(today, m["which"], m["p"], m["e"])))
    for m in REL_WEEKDAY.finditer(text):
        which = (m["which"] or "").lower()
        target = WEEKDAYS[m["wd"].lower()]
        ahead = (target - today.weekday()) % 7
        if which == "last":
            ahead = ahead - 7 if ahead else -7
        elif which == "next" and ahead == 0:
            ahead = 7
        elif which in ("", "on") and ahead and _past_tense_around(sentence, m.start(), m.end()):
            ahead -= 7  # 'I went sailing on Sunday': the latest Sunday, today included
        sentence.take(Span(m.start(), m.end(), "date", (today + timedelta(days=ahead)).isoformat()))


def _past_tense_around(sentence: Sentence, start: int, end: int) -> bool:
    """Does the clause around a weekday speak of the past, and not of a target date?

    Past: a past form ('went', 'was') or an '-ed' verb not after 'is'/'will'/...;
    not when the clause also speaks of the future ('will', "'ll", 'next') or the
    weekday is a target ('for Friday', 'to Monday', 'until Friday').
    """
    text = sentence.text
    clause_start, clause_end = sentence.clause_of(start)
    lo, hi = max(clause_start, start - TENSE_WINDOW), min(clause_end, end + TENSE_WINDOW)
    if WEEKDAY_TARGET.search(text, max(lo, start - 10), start):
        return False
    return told_in_past(text, lo, hi)


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


def _times(sentence: Sentence, today: date | None) -> None:
    text = sentence.text
    found = _clock_times(text) if sentence.has_digit else []
    if holds_any(sentence.folded, TIME_WORD_HINTS):
        for m in TIME_WORD.finditer(text):
            value = "00:00" if m["w"].lower() == "midnight" else "12:00"
            found.append(Span(m.start(), m.end(), "date", value))
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


def _clock_times(text: str) -> list[Span]:
    """'14:30', '9:05 pm UTC', '7am': each holds a digit."""
    found: list[Span] = []
    for m in TIME.finditer(text):
        hour, minute = _hour(int(m["h"]), m["ampm"]), int(m["mi"])
        if hour is None or minute > 59:
            continue
        found.append(
            Span(m.start(), m.end(), "date", _clock(hour, minute, int(m["s"] or 0)) + _tz(m["tz"]))
        )
    for m in TIME_AMPM.finditer(text):
        hour = _hour(int(m["h"]), m["ampm"])
        if hour is not None:
            found.append(Span(m.start(), m.end(), "date", _clock(hour, 0, 0) + _tz(m["tz"])))
    return found


def _date_before(sentence: Sentence, start: int) -> Span | None:
    """The ISO-day date a time directly follows ('March 5, 2024 at 14:00'), if any.

    The gap is short by definition, so only the last few offsets are looked up.
    """
    for end in range(start, max(-1, start - DATETIME_GAP_LIMIT), -1):
        day = sentence.day_ends.get(end)
        if day is not None and DATETIME_GAP.match(sentence.text[end:start]):
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


def _money(sentence: Sentence, today: date | None) -> None:
    if not sentence.has_digit:
        return
    for m in AMBIGUOUS_MONEY.finditer(sentence.text):  # '¥600': yen or yuan?
        sentence.take(_verbatim_span(sentence, m.start(), m.end(), "money"))
    for pattern in (MONEY_PRE, MONEY_POST):
        for m in pattern.finditer(sentence.text):
            cur = m["cur"]
            code = CURRENCY_SYMBOLS.get(cur) or (cur if cur in CURRENCY_CODES else None)
            code = code or CURRENCY_WORDS.get(cur.lower())
            if code is None:
                continue
            if DOT_GROUPS.fullmatch(m["num"]):  # '€1.250': 1250 or 1.25?
                sentence.take(_verbatim_span(sentence, m.start(), m.end(), "money"))
                continue
            amount = _amount(m["num"], m["scale"])
            sentence.take(Span(m.start(), m.end(), "money", amount, code))


def _verbatim_span(sentence: Sentence, start: int, end: int, kind: str) -> Span:
    """An amount kept as written (value = the text, unit None): it has two readings."""
    return Span(start, end, kind, verbatim(sentence.text[start:end]))


def _verbatim_quantities(sentence: Sentence, today: date | None) -> None:
    """Paces ('5:30 per km', not a time of day) and decimal commas ('2,5 m'), as written."""
    if not sentence.has_digit:
        return
    text = sentence.text
    for m in PACE.finditer(text):
        sentence.take(_verbatim_span(sentence, m.start(), m.end(), "number"))
    for m in DECIMAL_COMMA.finditer(text):
        if not sentence.free(m.start(), m.end()):
            continue
        _, end = _unit_at(text, m.end())
        sentence.take(_verbatim_span(sentence, m.start(), end, "number"))


def _amount(num: str, scale: str | None) -> int | float:
    value = number_value(num)
    if scale:
        value = scaled(value, SCALES[scale.strip()])
    return value


def _numbers(sentence: Sentence, today: date | None) -> None:
    if not sentence.has_digit:
        return
    text = sentence.text
    for m in NUMBER.finditer(text):
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
        second: Span | None = None
        if unit is None:
            unit, second = _range_unit(sentence, end)
        noun = "" if unit else _noun_after(text, end)
        sentence.take(
            Span(
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
        or (DOT_GROUPS.fullmatch(m["num"]) is not None and m["num"].count(".") > 1)
    )


def _unit_at(text: str, end: int) -> tuple[str | None, int]:
    m = UNIT_AT.match(text, end, end + UNIT_WINDOW)
    if m is None:
        return None, end
    word = m.group(1)
    return UNIT_SYMBOLS.get(word) or UNIT_WORDS.get(word.lower()), m.end()


def _range_unit(sentence: Sentence, end: int) -> tuple[str | None, Span | None]:
    """'5-10 km' and '5 to 10 km': the first number takes the second one's unit."""
    text = sentence.text
    m = RANGE_TAIL.match(text, end, end + LOOKAHEAD)
    if m is None:
        return None, None
    unit, unit_end = _unit_at(text, m.end())
    if unit is None:
        return None, None
    value = _amount(m["num"], None)
    return unit, Span(m.start("num"), unit_end, "number", value, unit)


def _noun_after(text: str, end: int) -> str:
    start = end + 1 if text[end : end + 1] == " " else end
    m = WORD.match(text, start, start + LOOKAHEAD)
    if m is None:
        return ""
    word = m.group().casefold()
    return "" if word in STOPWORDS or word.isdigit() else word


Recogniser = Callable[[Sentence, date | None], None]
_RECOGNISERS: tuple[Recogniser, ...] = (
    _ids,
    _dates,
    _accounts,
    _scopes,
    _verbatim_quantities,
    _times,
    _money,
    _numbers,
)
# In the same order, those that may find something in a sentence without a digit: the
# others (accounts, paces and decimal commas, amounts, numbers) need one
_WITHOUT_DIGITS: tuple[Recogniser, ...] = (_ids, _dates, _scopes, _times)


def _recognisers_for(sentence: Sentence, today: date | None) -> tuple[Recogniser, ...]:
    """The recognisers that may find something: all with a digit; without one, none
    when none of their gates (the same as inside each) lets a pattern through."""
    if sentence.has_digit:
        return _RECOGNISERS
    text, words = sentence.text, sentence.folded
    if (
        "@" in text
        or "-" in text
        or ":" in text
        or holds_any(words, URL_HINTS)
        or holds_any(words, TIME_WORD_HINTS)
        or (today is not None and holds_any(words, RELATIVE_HINTS))
    ):
        return _WITHOUT_DIGITS
    return ()
