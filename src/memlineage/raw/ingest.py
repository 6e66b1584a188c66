"""Turning client JSON into events: validation with the line and field named.

Everything is validated before anything is stored, so a bad line leaves the
store exactly as it was. Validation refuses, up front, everything a later
stage would refuse (the output parser's empty keys and kinds, PostgreSQL's
NUL characters), so an event that ``add`` accepts never blocks a
consolidation of its subject.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import IO, Any

from memlineage.errors import BadInput
from memlineage.model import EVENT_KINDS, TRUST_LEVELS, Fact, NewEvent
from memlineage.progress import Progress, begin

#: the fields of an event that hold one string (or null)
PLAIN_FIELDS: tuple[str, ...] = (
    "id",
    "subject",
    "text",
    "at",
    "kind",
    "project",
    "trust",
    "supersedes",
    "speaker",
)
EVENT_FIELDS = frozenset({*PLAIN_FIELDS, "taint", "facts"})
FACT_FIELDS = frozenset({"key", "value", "unit", "polarity", "kind"})
#: ids, subjects, projects, speakers, supersedes and tenants: at most this many characters
MAX_ID_LENGTH = 200
NUL = "\x00"
_CHECKED = "_memlineage_checked"
# Reading and checking report progress every this many lines or bytes: often enough for
# a bar, rarely enough that the reports cost nothing next to the lines themselves.
CHECK_EVERY = 1000
READ_CHUNK = 1 << 16

# RFC 3339 section 5.6, date-time. Written by hand because no library parses
# exactly this grammar: datetime.fromisoformat and dateutil accept ISO 8601's
# week dates, basic format and missing seconds, and fromisoformat silently
# truncates fractions past microseconds. [0-9], not \d: \d matches any
# Unicode digit. A space for the "T" is allowed by the RFC's note to 5.6.
_RFC3339 = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})[Tt ]"
    r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]+))?"
    r"(?P<offset>[Zz]|(?P<sign>[+-])(?P<off_hour>[0-9]{2}):(?P<off_minute>[0-9]{2}))"
)
_DATE_ONLY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def normalize_time(value: str, field: str = "at") -> str:
    """An RFC 3339 date-time, normalized but keeping its own UTC offset.

    The normal form is ``YYYY-MM-DDTHH:MM:SS[.ffffff]±HH:MM``: upper-case
    ``T``, seconds always, a fraction of exactly six digits or none (when it
    is zero), and ``Z`` for a zero offset (``+00:00`` and ``-00:00`` too).
    The offset is kept because it names the writer's local day, against which
    relative dates ("tomorrow") resolve. Refused: ISO 8601 forms outside
    RFC 3339 (week dates, basic format, no seconds, no offset), date-only
    values, leap seconds (``:60``), precision finer than a microsecond, and
    instants outside years 1 to 9999 in UTC.
    """
    match = _RFC3339.fullmatch(value)
    if match is None:
        raise BadInput(_time_problem(value), field=field)
    year, month, day, hour, minute, second, fraction = match.group(
        "year", "month", "day", "hour", "minute", "second", "fraction"
    )
    fraction = fraction or ""
    if fraction[6:].strip("0"):
        raise BadInput(f"at most microsecond precision (6 fraction digits): {value!r}", field=field)
    if second == "60":
        raise BadInput(f"leap seconds (:60) are not supported; use :59: {value!r}", field=field)
    micro = fraction[:6].ljust(6, "0")
    offset = match["offset"]
    try:
        zone = _zone(offset.upper())
        parsed = datetime(
            int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=zone
        )
        if year in ("0001", "9999"):
            parsed.astimezone(UTC)  # the instant must exist in UTC too (0001-01-01T00:30+01:00)
    except (ValueError, OverflowError) as exc:
        raise BadInput(f"not a valid date-time ({exc}): {value!r}", field=field) from None
    suffix = "Z" if zone is UTC else offset
    dot = f".{micro}" if micro != "000000" else ""
    return f"{year}-{month}-{day}T{hour}:{minute}:{second}{dot}{suffix}"


@functools.lru_cache(maxsize=256)
def _zone(offset: str) -> timezone:
    """The tzinfo of an RFC 3339 offset (``Z`` or ``±HH:MM``); UTC for every zero offset."""
    if offset == "Z":
        return UTC
    hours, minutes = int(offset[1:3]), int(offset[4:6])
    if hours > 23 or minutes > 59:
        raise ValueError("offset out of range")
    delta = timedelta(hours=hours, minutes=minutes)
    if not delta:
        return UTC
    return timezone(-delta if offset[0] == "-" else delta)


def _time_problem(value: str) -> str:
    if _DATE_ONLY.fullmatch(value):
        return f"needs a time and a UTC offset (e.g. {value}T00:00:00Z), not a date alone"
    return f"not an RFC 3339 date-time such as 2026-03-04T23:00:00-07:00: {value!r}"


def utc_now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _check_identifier(value: str, name: str) -> None:
    _check_no_nul(value, name)
    if len(value) > MAX_ID_LENGTH or value != value.strip():
        raise BadInput(f"must be at most {MAX_ID_LENGTH} characters, no outer spaces", field=name)


def _check_no_nul(value: str, name: str) -> None:
    # PostgreSQL cannot store U+0000 in text; refusing it everywhere keeps both backends alike.
    if NUL in value:
        raise BadInput("must not contain the NUL character (U+0000)", field=name)


def _text(obj: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = obj.get(name)
    if value is None:
        if required:
            raise BadInput("is required", field=name)
        return None
    if not isinstance(value, str):
        raise BadInput(f"must be a string, not {type(value).__name__}", field=name)
    if required and not value.strip():
        raise BadInput("must not be empty", field=name)
    _check_no_nul(value, name)
    return value


def _identifier(obj: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = _text(obj, name, required=required)
    if value is not None:
        if not value.strip():
            raise BadInput("must not be blank", field=name)
        _check_identifier(value, name)
    return value


def _choice(obj: Mapping[str, Any], name: str, allowed: Iterable[str]) -> str | None:
    value = _text(obj, name)
    if value is not None and value not in allowed:
        raise BadInput(f"must be one of {', '.join(allowed)}; got {value!r}", field=name)
    return value


def parse_taint(value: Any, field: str = "taint") -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(t, str) and t.strip() for t in value):
        raise BadInput("must be a list of non-empty strings", field=field)
    for label in value:
        _check_no_nul(label, field)
    return tuple(sorted(set(value)))


def _nonblank(obj: Mapping[str, Any], name: str, where: str, default: str | None = None) -> str:
    """A fact's key or kind: the output parser refuses a blank one, so add refuses it first."""
    value = obj.get(name, default)
    if not isinstance(value, str) or not value.strip():
        raise BadInput("must be a non-empty string", field=f"{where}.{name}")
    _check_no_nul(value, f"{where}.{name}")
    return value


def parse_fact(obj: Any, index: int) -> Fact:
    where = f"facts[{index}]"
    if not isinstance(obj, dict):
        raise BadInput("must be an object", field=where)
    unknown = set(obj) - FACT_FIELDS
    if unknown:
        raise BadInput(f"unknown field {sorted(unknown)[0]!r}", field=where)
    key = _nonblank(obj, "key", where)
    value = obj.get("value")
    if isinstance(value, float) and not math.isfinite(value):
        raise BadInput("must be a finite number", field=f"{where}.value")
    if not isinstance(value, str | int | float | bool):
        raise BadInput("must be a string, number or boolean", field=f"{where}.value")
    if isinstance(value, str):
        _check_no_nul(value, f"{where}.value")
    unit = obj.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise BadInput("must be a string", field=f"{where}.unit")
    if unit is not None:
        _check_no_nul(unit, f"{where}.unit")
    polarity = obj.get("polarity", True)
    if not isinstance(polarity, bool):
        raise BadInput("must be true or false", field=f"{where}.polarity")
    kind = _nonblank(obj, "kind", where, default="fact")
    return Fact(key=key, value=value, unit=unit, polarity=polarity, kind=kind)


def _facts(obj: Mapping[str, Any]) -> tuple[Fact, ...]:
    facts = obj.get("facts")
    if facts is None:
        return ()
    if not isinstance(facts, list):  # false, 0 and "" too: absent is null or no field at all
        raise BadInput(f"must be a list, not {_json_type(facts)}", field="facts")
    return tuple(parse_fact(f, i) for i, f in enumerate(facts))


def parse_event(obj: Any) -> NewEvent:
    """Validate one event object; BadInput names the field."""
    event = _build_event(obj)
    _ = event.content_hash  # hashing now makes lone surrogates and the like bad input here
    # Marks the event as checked, so Memory.add need not check it again (a plain
    # attribute, not a field: equality, hashing and dataclasses.replace ignore it).
    object.__setattr__(event, _CHECKED, True)
    return event


def parse_events(
    events: Iterable[Mapping[str, Any] | NewEvent], lines: Sequence[int] | None = None
) -> list[NewEvent]:
    """Validate events given as objects or ``NewEvent``s; BadInput names the bad one.

    The error's ``line`` is ``lines[i]`` for ``events[i]`` when given (a JSONL
    reader passes the file's line numbers), else the 1-based position; its field
    keeps the ``[index].`` prefix.
    """
    parsed: list[NewEvent] = []
    for index, event in enumerate(events):
        try:
            parsed.append(
                check_event(event)
                if isinstance(event, NewEvent)
                else parse_event(dict(event) if isinstance(event, Mapping) else event)
            )
        except BadInput as exc:
            line = lines[index] if lines is not None else index + 1
            raise BadInput(exc.reason, line=line, field=f"[{index}].{exc.field or ''}") from exc
    return parsed


def check_event(event: NewEvent) -> NewEvent:
    """An event built in Python passes the same checks as one read from JSON.

    Returns ``event`` itself when it is already in normal form (keeping its
    computed hash), else its normalized copy (``at`` normalized, taint sorted).
    """
    if getattr(event, _CHECKED, False):
        return event
    rebuilt = _build_event(event.content())
    checked = event if rebuilt == event else rebuilt  # the original keeps its computed hash
    _ = checked.content_hash
    object.__setattr__(checked, _CHECKED, True)
    return checked


def _build_event(obj: Any) -> NewEvent:
    if not isinstance(obj, dict):
        raise BadInput(f"an event must be a JSON object, not {_json_type(obj)}")
    unknown = set(obj) - EVENT_FIELDS
    if unknown:
        raise BadInput("unknown field", field=sorted(unknown)[0])
    at = _text(obj, "at")
    event = NewEvent(
        id=_identifier(obj, "id", required=True) or "",
        subject=_identifier(obj, "subject", required=True) or "",
        text=_text(obj, "text", required=True) or "",
        at=normalize_time(at) if at is not None else None,
        kind=_choice(obj, "kind", EVENT_KINDS),
        project=_identifier(obj, "project"),
        trust=_choice(obj, "trust", TRUST_LEVELS) or "user",
        taint=parse_taint(obj.get("taint")),
        facts=_facts(obj),
        supersedes=_identifier(obj, "supersedes"),
        speaker=_identifier(obj, "speaker"),
    )
    if event.supersedes == event.id:
        raise BadInput("an event cannot supersede itself", field="supersedes")
    return event


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


# -- JSON Lines --


def read_stream(stream: IO[bytes], progress: Progress | None = None) -> bytes:
    """Everything ``stream`` holds (stdin: until its writer closes it).

    With ``progress``, it is read as it arrives and the lines received so far
    are reported as ``reading`` with no total (the input's end is not known).
    """
    advance = begin(progress, "reading", None)
    if advance is None:
        return stream.read()
    read = getattr(stream, "read1", stream.read)  # read1: what arrived, without waiting for more
    chunks: list[bytes] = []
    while chunk := read(READ_CHUNK):
        chunks.append(chunk)
        advance(chunk.count(b"\n"))
    if chunks and not chunks[-1].endswith(b"\n"):
        advance(1)  # a last line without its newline is a line too
    return b"".join(chunks)


def split_lines(data: bytes, source: str = "input") -> list[str]:
    """The lines of a UTF-8 JSONL document, split on ``\\n`` only.

    ``str.splitlines`` would also split on U+2028, U+2029 and U+0085, which a
    JSON string may hold as they are. A trailing ``\\r`` (CRLF files) is dropped,
    and so is a byte order mark at the start (RFC 8259 lets a parser ignore it).
    """
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BadInput(
            f"{source} is not UTF-8: byte 0x{data[exc.start]:02x} cannot start or continue"
            " a character",
            line=line,
        ) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _unique_keys(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise BadInput("appears twice in one object", field=name)
            seen.add(name)
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_json(text: str) -> Any:
    """One JSON text: duplicate keys, NaN/Infinity and absurd nesting are BadInput."""
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_reject_constant)
    except RecursionError:
        raise BadInput("not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, NaN, too many digits for an int
        raise BadInput(f"not valid JSON: {exc}") from None


def load_jsonl(lines: Iterable[str]) -> tuple[list[Any], list[int]]:
    """Every JSON value of a JSONL document with its 1-based line; blank lines are skipped.

    Blank means JSON whitespace only (space, tab, CR): other Unicode spaces
    on a line of their own are not JSON, and are refused.
    """
    values: list[Any] = []
    numbers: list[int] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip(" \t\r"):
            continue
        try:
            values.append(load_json(line))
        except BadInput as exc:
            raise exc.at_line(number) from None
        numbers.append(number)
    return values, numbers


def parse_jsonl(lines: Iterable[str]) -> list[NewEvent]:
    """Every event of a JSONL document, or BadInput naming the first bad line."""
    return parse_jsonl_numbered(lines)[0]


def parse_jsonl_numbered(
    lines: Iterable[str], progress: Progress | None = None
) -> tuple[list[NewEvent], list[int]]:
    """Every event of a JSONL document and the 1-based line each came from.

    ``progress`` hears ``checking`` in lines (the total: ``len(lines)`` of a sequence).
    """
    total = len(lines) if isinstance(lines, Sequence) else None
    advance = begin(progress, "checking", total)
    values, numbers = load_jsonl(lines)
    events: list[NewEvent] = []
    first_seen: dict[str, tuple[str, int]] = {}
    reported = 0
    for value, number in zip(values, numbers, strict=True):
        try:
            event = parse_event(value)
        except BadInput as exc:
            raise exc.at_line(number) from None
        hash_, line = first_seen.setdefault(event.id, (event.content_hash, number))
        if hash_ != event.content_hash:
            raise BadInput(
                f"event {event.id!r} appears on line {line} with other content; ids are immutable",
                line=number,
                field="id",
            )
        events.append(event)
        if advance is not None and number - reported >= CHECK_EVERY:
            advance(number - reported)
            reported = number
    if advance is not None:
        advance((total if total is not None else (numbers or [0])[-1]) - reported)
    return events, numbers
