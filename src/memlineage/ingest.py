"""Turning client JSON into events: validation with the line and field named.

Everything is validated before anything is stored, so a bad line leaves the
store exactly as it was.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from .errors import BadInput
from .model import EVENT_KINDS, TRUST_LEVELS, Fact, NewEvent

EVENT_FIELDS = frozenset(
    {"id", "subject", "text", "at", "kind", "project", "trust", "taint", "facts", "supersedes"}
)
FACT_FIELDS = frozenset({"key", "value", "unit", "polarity", "kind"})
MAX_ID_LENGTH = 200


def normalize_time(value: str, field: str = "at") -> str:
    """An RFC 3339 timestamp with an offset, normalized to UTC ``...Z``."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise BadInput(f"not an RFC 3339 timestamp: {value!r}", field=field) from exc
    if parsed.tzinfo is None:
        raise BadInput(f"timestamp needs a UTC offset (e.g. Z): {value!r}", field=field)
    return parsed.astimezone(UTC).isoformat().replace("+00:00", "Z")


def utc_now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


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
    return value


def _identifier(obj: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = _text(obj, name, required=required)
    if value is not None and (len(value) > MAX_ID_LENGTH or value != value.strip()):
        raise BadInput(f"must be at most {MAX_ID_LENGTH} characters, no outer spaces", field=name)
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
    if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value):
        raise BadInput("must be a list of non-empty strings", field=field)
    return tuple(sorted(set(value)))


def parse_fact(obj: Any, index: int) -> Fact:
    where = f"facts[{index}]"
    if not isinstance(obj, dict):
        raise BadInput("must be an object", field=where)
    unknown = set(obj) - FACT_FIELDS
    if unknown:
        raise BadInput(f"unknown field {sorted(unknown)[0]!r}", field=where)
    key = obj.get("key")
    if not isinstance(key, str) or not key:
        raise BadInput("must be a non-empty string", field=f"{where}.key")
    value = obj.get("value")
    if isinstance(value, float) and not math.isfinite(value):
        raise BadInput("must be a finite number", field=f"{where}.value")
    if not isinstance(value, str | int | float | bool):
        raise BadInput("must be a string, number or boolean", field=f"{where}.value")
    unit = obj.get("unit")
    if unit is not None and not isinstance(unit, str):
        raise BadInput("must be a string", field=f"{where}.unit")
    polarity = obj.get("polarity", True)
    if not isinstance(polarity, bool):
        raise BadInput("must be true or false", field=f"{where}.polarity")
    kind = obj.get("kind", "fact")
    if not isinstance(kind, str):
        raise BadInput("must be a string", field=f"{where}.kind")
    return Fact(key=key, value=value, unit=unit, polarity=polarity, kind=kind)


def parse_event(obj: Any) -> NewEvent:
    """Validate one event object; BadInput names the field."""
    if not isinstance(obj, dict):
        raise BadInput("an event must be a JSON object")
    unknown = set(obj) - EVENT_FIELDS
    if unknown:
        raise BadInput("unknown field", field=sorted(unknown)[0])
    facts = obj.get("facts") or []
    if not isinstance(facts, list):
        raise BadInput("must be a list", field="facts")
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
        facts=tuple(parse_fact(f, i) for i, f in enumerate(facts)),
        supersedes=_identifier(obj, "supersedes"),
    )
    if event.supersedes == event.id:
        raise BadInput("an event cannot supersede itself", field="supersedes")
    _ = event.content_hash  # hashing now makes lone surrogates and the like bad input here
    return event


def parse_jsonl(lines: Iterable[str]) -> list[NewEvent]:
    """Every event of a JSONL document, or BadInput naming the first bad line."""
    events: list[NewEvent] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=_reject_constant)
        except (json.JSONDecodeError, ValueError) as exc:
            raise BadInput(f"not valid JSON: {exc}", line=number) from exc
        try:
            events.append(parse_event(obj))
        except BadInput as exc:
            raise exc.at_line(number) from exc
    return events


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
