"""Canonical value comparison: numbers with units, money, and plain strings.

The gate compares an item's value with a claim's value through :func:`canonical`.
A canonical value is a pair ``(family, magnitude)``:

* for a number with a recognised physical unit, ``family`` is the name of the
  pint *base* unit and ``magnitude`` the value in that base unit, so
  ``5 km == 5000 m`` but ``5 mi != 5 km``. pint treats bytes and percent as
  dimensionless; the base-unit name (``bit`` vs ``dimensionless``) keeps
  ``100 %`` and ``1 B`` apart;
* for money, ``family`` is ``currency:<ISO code>`` (no exchange rates: 5 USD
  and 5 EUR differ);
* for a plain number (no unit) the family is ``number``; for an unrecognised
  unit word it is ``unit:<word>``;
* strings are NFC-normalised, whitespace-collapsed and case-folded.

Unit words go through the project's own alias table (:data:`UNIT_ALIASES`);
free text is never handed to pint's parser. The one pint ``UnitRegistry`` is
built lazily, once per process, and each unit's linear map to its base unit
is cached, so converting a value costs one multiplication.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dateutil.parser import isoparse

from memlineage.meaning import caches
from memlineage.model import FactValue

Canonical = tuple[str, str]


@dataclass(frozen=True)
class UnitSpec:
    """A recognised unit: its name as stored on items and its pint expression."""

    name: str
    pint_expr: str


def _spec(name: str, pint_expr: str | None = None) -> UnitSpec:
    return UnitSpec(name, pint_expr or name)


# name -> pint expression (the expressions are ours, parsed once; never user text)
_UNITS: dict[str, UnitSpec] = {
    s.name: s
    for s in (
        _spec("millimeter"),
        _spec("centimeter"),
        _spec("meter"),
        _spec("kilometer"),
        _spec("inch"),
        _spec("foot"),
        _spec("yard"),
        _spec("mile"),
        _spec("nautical_mile"),
        _spec("milligram"),
        _spec("gram"),
        _spec("kilogram"),
        _spec("metric_ton"),
        _spec("pound"),
        _spec("ounce"),
        _spec("millisecond"),
        _spec("second"),
        _spec("minute"),
        _spec("hour"),
        _spec("day"),
        _spec("week"),
        _spec("month"),
        _spec("year"),
        _spec("bit"),
        _spec("byte"),
        _spec("kilobit"),
        _spec("megabit"),
        _spec("gigabit"),
        _spec("kilobyte"),
        _spec("megabyte"),
        _spec("gigabyte"),
        _spec("terabyte"),
        _spec("petabyte"),
        _spec("kibibyte"),
        _spec("mebibyte"),
        _spec("gibibyte"),
        _spec("tebibyte"),
        _spec("megabit/second", "megabit / second"),
        _spec("gigabit/second", "gigabit / second"),
        _spec("megabyte/second", "megabyte / second"),
        _spec("percent"),
        _spec("degree_Celsius"),
        _spec("degree_Fahrenheit"),
        _spec("kelvin"),
        _spec("kilometer/hour", "kilometer / hour"),
        _spec("mile/hour", "mile / hour"),
        _spec("meter/second", "meter / second"),
        _spec("milliliter"),
        _spec("liter"),
        _spec("gallon"),
        _spec("square_meter", "meter ** 2"),
        _spec("square_kilometer", "kilometer ** 2"),
        _spec("square_foot", "foot ** 2"),
        _spec("hectare"),
        _spec("acre"),
        _spec("hertz"),
        _spec("kilohertz"),
        _spec("megahertz"),
        _spec("gigahertz"),
        _spec("watt"),
        _spec("kilowatt"),
        _spec("megawatt"),
        _spec("kilowatt_hour", "kilowatt * hour"),
        _spec("kilocalorie"),
    )
}

# Symbols matched case-sensitively (MB is not mb). Left out on purpose: "K" (5K users),
# "b" and "l" (too often not a unit), "in" (a preposition), "t" (ton or tonne?).
_SYMBOLS: dict[str, str] = {
    "mm": "millimeter",
    "cm": "centimeter",
    "m": "meter",
    "km": "kilometer",
    "ft": "foot",
    "yd": "yard",
    "mi": "mile",
    "nmi": "nautical_mile",
    "mg": "milligram",
    "g": "gram",
    "kg": "kilogram",
    "lb": "pound",
    "lbs": "pound",
    "oz": "ounce",
    "ms": "millisecond",
    "s": "second",
    "sec": "second",
    "secs": "second",
    "min": "minute",
    "mins": "minute",
    "h": "hour",
    "hr": "hour",
    "hrs": "hour",
    "wk": "week",
    "wks": "week",
    "yr": "year",
    "yrs": "year",
    "B": "byte",
    "kb": "kilobit",
    "Kb": "kilobit",
    "Mb": "megabit",
    "Gb": "gigabit",
    "kB": "kilobyte",
    "KB": "kilobyte",
    "MB": "megabyte",
    "GB": "gigabyte",
    "TB": "terabyte",
    "PB": "petabyte",
    "KiB": "kibibyte",
    "MiB": "mebibyte",
    "GiB": "gibibyte",
    "TiB": "tebibyte",
    "Mbps": "megabit/second",
    "Mbit/s": "megabit/second",
    "Gbps": "gigabit/second",
    "Gbit/s": "gigabit/second",
    "MB/s": "megabyte/second",
    "%": "percent",
    "°C": "degree_Celsius",
    "ºC": "degree_Celsius",
    "°F": "degree_Fahrenheit",
    "ºF": "degree_Fahrenheit",
    "km/h": "kilometer/hour",
    "kph": "kilometer/hour",
    "kmh": "kilometer/hour",
    "mph": "mile/hour",
    "m/s": "meter/second",
    "ml": "milliliter",
    "mL": "milliliter",
    "L": "liter",
    "gal": "gallon",
    "m2": "square_meter",
    "m²": "square_meter",
    "km2": "square_kilometer",
    "km²": "square_kilometer",
    "sqft": "square_foot",
    "ha": "hectare",
    "Hz": "hertz",
    "kHz": "kilohertz",
    "MHz": "megahertz",
    "GHz": "gigahertz",
    "W": "watt",
    "kW": "kilowatt",
    "MW": "megawatt",
    "kWh": "kilowatt_hour",
    "kcal": "kilocalorie",
}

# Words matched case-insensitively.
_WORDS: dict[str, str] = {
    "millimeter": "millimeter",
    "millimetre": "millimeter",
    "centimeter": "centimeter",
    "centimetre": "centimeter",
    "meter": "meter",
    "metre": "meter",
    "kilometer": "kilometer",
    "kilometre": "kilometer",
    "inch": "inch",
    "inches": "inch",
    "foot": "foot",
    "feet": "foot",
    "yard": "yard",
    "mile": "mile",
    "nautical mile": "nautical_mile",
    "milligram": "milligram",
    "gram": "gram",
    "kilogram": "kilogram",
    "kilo": "kilogram",
    "tonne": "metric_ton",
    "metric ton": "metric_ton",
    "pound": "pound",
    "ounce": "ounce",
    "millisecond": "millisecond",
    "second": "second",
    "minute": "minute",
    "hour": "hour",
    "day": "day",
    "week": "week",
    "month": "month",
    "year": "year",
    "bit": "bit",
    "byte": "byte",
    "kilobyte": "kilobyte",
    "megabyte": "megabyte",
    "gigabyte": "gigabyte",
    "terabyte": "terabyte",
    "percent": "percent",
    "per cent": "percent",
    "pct": "percent",
    "degrees celsius": "degree_Celsius",
    "degree celsius": "degree_Celsius",
    "celsius": "degree_Celsius",
    "degrees fahrenheit": "degree_Fahrenheit",
    "degree fahrenheit": "degree_Fahrenheit",
    "fahrenheit": "degree_Fahrenheit",
    "kelvin": "kelvin",
    "kilometers per hour": "kilometer/hour",
    "kilometres per hour": "kilometer/hour",
    "miles per hour": "mile/hour",
    "meters per second": "meter/second",
    "metres per second": "meter/second",
    "milliliter": "milliliter",
    "millilitre": "milliliter",
    "liter": "liter",
    "litre": "liter",
    "gallon": "gallon",
    "square meter": "square_meter",
    "square metre": "square_meter",
    "square kilometer": "square_kilometer",
    "square kilometre": "square_kilometer",
    "square foot": "square_foot",
    "square feet": "square_foot",
    "sq ft": "square_foot",
    "hectare": "hectare",
    "acre": "acre",
    "hertz": "hertz",
    "watt": "watt",
    "kilowatt": "kilowatt",
    "megawatt": "megawatt",
    "kilowatt hour": "kilowatt_hour",
    "kilowatt-hour": "kilowatt_hour",
    "kilocalorie": "kilocalorie",
    "calories": "kilocalorie",
}

# Currency words and symbols -> ISO 4217 code. Symbols are matched case-sensitively.
CURRENCY_SYMBOLS: dict[str, str] = {
    "US$": "USD",
    "CA$": "CAD",
    "C$": "CAD",
    "A$": "AUD",
    "AU$": "AUD",
    "NZ$": "NZD",
    "HK$": "HKD",
    "$": "USD",
    "€": "EUR",
    "£": "GBP",
    "JP¥": "JPY",
    "CN¥": "CNY",
    "₹": "INR",
    "₩": "KRW",
    "₽": "RUB",
    "₺": "TRY",
    "₿": "BTC",
}
CURRENCY_CODES: frozenset[str] = frozenset(
    {
        "USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "NZD", "CNY", "INR", "SEK",
        "NOK", "DKK", "PLN", "CZK", "HUF", "BRL", "MXN", "ZAR", "SGD", "HKD", "KRW",
        "RUB", "TRY", "BTC",
    }
)  # fmt: skip
CURRENCY_WORDS: dict[str, str] = {
    "dollar": "USD",
    "dollars": "USD",
    "usd": "USD",
    "bucks": "USD",
    "euro": "EUR",
    "euros": "EUR",
    "eur": "EUR",
    "pounds sterling": "GBP",
    "sterling": "GBP",
    "gbp": "GBP",
    "yen": "JPY",
    "yuan": "CNY",
    "renminbi": "CNY",
    "swiss francs": "CHF",
    "francs": "CHF",
    "rupees": "INR",
    "kronor": "SEK",
    "kroner": "NOK",
}


# Spellings that name two different things. The extractor keeps an amount written
# with one of them verbatim (value = the text as written, unit None) instead of
# guessing: '¥' is the yen or the yuan, '20 pounds' a mass or a sum of money,
# '2B' two bytes or two billion.
AMBIGUOUS_CURRENCY_SYMBOLS: dict[str, tuple[str, ...]] = {"¥": ("JPY", "CNY")}
AMBIGUOUS_UNIT_SPELLINGS: dict[str, tuple[str, ...]] = {
    "pound": ("pound", "GBP"),
    "pounds": ("pound", "GBP"),
    "B": ("byte", "billion"),
}


def _plural_words() -> dict[str, str]:
    """The table's words plus their regular plurals ('kilometers', 'kilowatt-hours')."""
    words = dict(_WORDS)
    for word, name in _WORDS.items():
        if word.endswith("s") or " per " in word or word in {"foot", "feet", "inch"}:
            continue
        words.setdefault(word + "s", name)
    return words


UNIT_WORDS: dict[str, str] = _plural_words()
UNIT_SYMBOLS: dict[str, str] = dict(_SYMBOLS)
#: Every recognised unit spelling (symbols and words) -> unit name as stored on items.
UNIT_ALIASES: dict[str, str] = {**UNIT_WORDS, **UNIT_SYMBOLS}


@functools.cache
def registry() -> Any:
    """The process-wide pint registry, built on first use (about 0.3 s)."""
    import pint

    return pint.UnitRegistry()


@functools.cache
def _linear_map(unit_name: str) -> tuple[float, float, str]:
    """(scale, offset, base-unit name) such that base = scale * value + offset.

    Every unit in the table is linear in its base unit (offset only for
    temperatures), so two pint conversions per unit per process suffice.
    """
    ureg = registry()
    expr = _UNITS[unit_name].pint_expr
    zero = ureg.Quantity(0.0, expr).to_base_units()
    one = ureg.Quantity(1.0, expr).to_base_units()
    base = str(one.units)
    return float(one.magnitude) - float(zero.magnitude), float(zero.magnitude), base


def resolve_unit(unit: str | None) -> str | None:
    """The unit name an alias stands for; currencies map to their ISO code.

    Returns None for None/empty and for spellings the table does not know.
    """
    if not unit:
        return None
    text = unit.strip()
    if text in _UNITS:
        return text
    if text in UNIT_SYMBOLS:
        return UNIT_SYMBOLS[text]
    lowered = " ".join(text.casefold().split())
    if lowered in UNIT_WORDS:
        return UNIT_WORDS[lowered]
    upper = text.upper()
    if upper in CURRENCY_CODES:
        return upper
    if text in CURRENCY_SYMBOLS:
        return CURRENCY_SYMBOLS[text]
    if lowered in CURRENCY_WORDS:
        return CURRENCY_WORDS[lowered]
    return None


def is_currency(unit: str | None) -> bool:
    return unit is not None and unit in CURRENCY_CODES


def unit_identity(unit: str | None) -> str:
    """What 'the same unit' means for value_changed vs unit_changed: the resolved name."""
    if not unit:
        return ""
    resolved = resolve_unit(unit)
    return resolved if resolved is not None else "?" + " ".join(unit.casefold().split())


_NUMERIC_TEXT = re.compile(r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?$")


def parse_numeric(text: str) -> float | None:
    """A plain decimal numeral ('4,500', '-3.25'); None for anything else."""
    stripped = text.strip()
    if not stripped or not any(c.isdigit() for c in stripped):
        return None
    if not _NUMERIC_TEXT.match(stripped):
        return None
    return float(stripped.replace(",", ""))


def format_magnitude(value: float) -> str:
    """12 significant digits: absorbs float noise of unit conversion, keeps 4,500 != 4,050."""
    if value == 0:
        return "0"
    return format(value, ".12g")


#: the shape stores and clients write; the stdlib reads it ten times faster than
#: dateutil, which reads every ISO 8601 form and decides whatever the stdlib refuses
_COMMON_STAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)?"
)


def read_timestamp(stamp: str) -> datetime | None:
    """An ISO 8601 timestamp as written (its own UTC offset, or naive), None when it
    does not parse."""
    parsed = _by_stdlib(stamp) if _COMMON_STAMP.fullmatch(stamp) else None
    return parsed if parsed is not None else _by_dateutil(stamp)


def _by_stdlib(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp)
    except ValueError:  # out of the stdlib's range (an hour of 24): dateutil decides
        return None


def _by_dateutil(stamp: str) -> datetime | None:
    try:
        return isoparse(stamp)
    except (ValueError, OverflowError):
        return None


def normalize_text(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split()).casefold()


#: values remembered per process: above the distinct values of a 100,000-event
#: subject's claims and items, which a run reads in the same order each time (an LRU
#: cache smaller than that cycle misses on every call)
VALUE_CACHE_SIZE = 1 << 18


@functools.lru_cache(maxsize=VALUE_CACHE_SIZE, typed=True)
def canonical(value: FactValue, unit: str | None) -> Canonical:
    """The canonical (family, magnitude) of a value with its unit. Never raises.

    Cached (typed, so True and 1 stay apart): the gate meets each value several times.
    """
    if isinstance(value, bool):
        return ("bool", "true" if value else "false")
    number: float | None
    if isinstance(value, int | float):
        number = float(value)
    elif unit:
        number = parse_numeric(value)
        if number is None:
            return ("str:" + unit_identity(unit), normalize_text(value))
    else:
        return ("str", normalize_text(value))
    if not math.isfinite(number):
        return ("number", repr(number))
    return _canonical_number(number, unit)


caches.register(canonical.cache_clear)


def _canonical_number(number: float, unit: str | None) -> Canonical:
    if not unit:
        return ("number", format_magnitude(number))
    resolved = resolve_unit(unit)
    if resolved is None:
        return ("unit:" + unit_identity(unit)[1:], format_magnitude(number))
    if resolved in CURRENCY_CODES:
        return ("currency:" + resolved, format_magnitude(number))
    scale, offset, base = _linear_map(resolved)
    return (base, format_magnitude(scale * number + offset))


def same_value(a: FactValue, a_unit: str | None, b: FactValue, b_unit: str | None) -> bool:
    return canonical(a, a_unit) == canonical(b, b_unit)


def number_value(text: str) -> int | float:
    """'4,500' -> 4500, '2.50' -> 2.5: an int when the numeral is integral."""
    number = float(text.replace(",", ""))
    if number.is_integer() and "." not in text and "e" not in text.lower():
        return int(text.replace(",", ""))
    return number


def scaled(value: int | float, factor: int) -> int | float:
    """Multiply by a scale word without float noise (2.5 million -> 2500000)."""
    result = round(value * factor, 6)
    return int(result) if float(result).is_integer() else result


def _displays() -> dict[str, str]:
    shown: dict[str, str] = {}
    for table in (UNIT_SYMBOLS, UNIT_WORDS):  # the first symbol of a unit wins
        for spelling, name in table.items():
            shown.setdefault(name, spelling)
    return shown


_DISPLAY: dict[str, str] = _displays()


def unit_display(unit: str) -> str:
    """A spelling of the unit the extractor reads back as the same unit ('°C', 'km', 'USD')."""
    resolved = resolve_unit(unit)
    if resolved is None:
        return unit
    return _DISPLAY.get(resolved, resolved)
