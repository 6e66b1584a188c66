"""Step 5: the strict output parser.

It accepts exactly the shape :meth:`memlineage.model.Output.to_json` emits:
an object with ``claims``, ``openItems``, ``unresolvedConflicts``, ``cold``
and ``statements``; each claim an object with ``key``, ``value``, ``unit``,
``polarity``, ``kind``, ``derivedFrom`` and ``text``; each statement an object
with ``text``, ``derivedFrom``, ``claims``, ``at``, ``project``,
``contested`` and ``kind`` (null or an event kind), and optionally ``speaker``
and ``part`` (null or ``[k, n]``, a numbered part of one long event). There is no ``summary``
field: the summary a reader sees is rendered from the statements. Anything
else, a missing field, an unknown field, a mistyped one, is an
:class:`OutputRejected` with a stable code and the path of the field; no
other exception leaves :func:`parse_output`, whatever the input.

One leniency: a JSON text wrapped in exactly one Markdown code fence
(```` ```json ```` … ```` ``` ````), as models in plain-text or JSON mode often
write it, is read as the document inside; nothing may stand before or after
the fence, and the inside is as strict as any other answer.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from memlineage.errors import MemlineageError
from memlineage.model import EVENT_KINDS, Claim, FactValue, Output, Statement

#: the rejection codes, stable across versions
CODES: tuple[str, ...] = (
    "not_json",
    "not_object",
    "missing_field",
    "unknown_field",
    "wrong_type",
    "empty_value",
    "not_finite",
)

OUTPUT_FIELDS: tuple[str, ...] = (
    "claims",
    "openItems",
    "unresolvedConflicts",
    "cold",
    "statements",
)
CLAIM_FIELDS: tuple[str, ...] = (
    "key",
    "value",
    "unit",
    "polarity",
    "kind",
    "derivedFrom",
    "text",
)
STATEMENT_FIELDS: tuple[str, ...] = (
    "text",
    "derivedFrom",
    "claims",
    "at",
    "project",
    "contested",
    "kind",
)
#: statement fields an output may leave out (added after the first version of the schema)
STATEMENT_OPTIONAL: tuple[str, ...] = ("speaker", "part")


# One fenced block, the whole text: ```json (or ``` alone), a newline, the document, ```.
_FENCED = re.compile(r"\A\s*```(?:json)?[ \t]*\r?\n(.*?)\r?\n?```\s*\Z", re.S | re.I)


class OutputRejected(MemlineageError):
    """The generator's output does not fit the schema; ``field`` is a path like claims[2].unit."""

    exit_code = 1

    def __init__(self, code: str, field: str, detail: str = "") -> None:
        self.code = code
        self.field = field
        self.detail = detail
        super().__init__(f"{code} at {field or '<root>'}: {detail}" if detail else code)


def parse_output(raw: object) -> Output:
    """Parse a generator output (plain JSON values, or a JSON text) into an :class:`Output`."""
    try:
        return _parse(raw)
    except OutputRejected:
        raise
    except RecursionError:  # absurdly deep input: still a rejection, never a crash
        raise OutputRejected("not_json", "", "input nested too deeply") from None


def _parse(raw: object) -> Output:
    doc = _decode(raw)
    obj = _exact_object(doc, OUTPUT_FIELDS, "")
    claims_raw = _list(obj["claims"], "claims")
    claims = tuple(
        _well_typed_claim(c) or _claim(c, f"claims[{i}]") for i, c in enumerate(claims_raw)
    )
    statements_raw = _list(obj["statements"], "statements")
    statements = tuple(
        _well_typed_statement(s) or _statement(s, f"statements[{i}]")
        for i, s in enumerate(statements_raw)
    )
    return Output(
        claims=claims,
        open_items=_str_list(obj["openItems"], "openItems"),
        unresolved_conflicts=_str_list(obj["unresolvedConflicts"], "unresolvedConflicts"),
        cold=_str_list(obj["cold"], "cold"),
        statements=statements,
    )


def _decode(raw: object) -> object:
    """A JSON text (str or bytes) is decoded first; NaN and Infinity are not JSON."""
    if isinstance(raw, bytes | bytearray):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OutputRejected("not_json", "", f"not UTF-8: {exc.reason}") from None
    if not isinstance(raw, str):
        return raw
    fenced = _FENCED.match(raw)
    if fenced is not None:
        raw = fenced.group(1)
    try:
        return json.loads(raw, parse_constant=_reject_constant)
    except OutputRejected:
        raise
    except ValueError as exc:
        raise OutputRejected("not_json", "", str(exc)) from None


def _reject_constant(name: str) -> Any:
    raise OutputRejected("not_finite", "", f"{name} is not JSON")


def _exact_object(
    value: object, fields: tuple[str, ...], path: str, optional: tuple[str, ...] = ()
) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise OutputRejected("not_object", path, f"expected an object, got {_type(value)}")
    for name in fields:
        if name not in value:
            raise OutputRejected("missing_field", _join(path, name), "required")
    for name in value:
        if name not in fields and name not in optional:
            raise OutputRejected("unknown_field", _join(path, str(name)), "not in the schema")
    return value


_CLAIM_KEYS = frozenset(CLAIM_FIELDS)


def _parsed_claim(value: object, index: int) -> Claim:
    claim = _well_typed_claim(value)
    return claim if claim is not None else _claim(value, f"claims[{index}]")


def _well_typed_claim(value: object) -> Claim | None:
    """The claim, when every field is what the schema asks; None sends it to ``_claim``.

    The same checks as ``_claim`` without naming a path per field (a path is only
    needed to say what is wrong): a consolidation parses a claim per item of the
    subject, tens of thousands at every run, and nearly all of them are well typed.
    """
    if type(value) is not dict or value.keys() != _CLAIM_KEYS:
        return None
    key, kind, text, unit = value["key"], value["kind"], value["text"], value["unit"]
    polarity, fact, derived_from = value["polarity"], value["value"], value["derivedFrom"]
    sources = _well_typed_str_list(derived_from)
    if (
        sources is None
        or type(key) is not str
        or not key.strip()
        or type(kind) is not str
        or not kind.strip()
        or type(text) is not str
        or (unit is not None and type(unit) is not str)
        or type(polarity) is not bool
        or not _well_typed_value(fact)
    ):
        return None
    return Claim(key, fact, unit, polarity, kind, sources, text)


def _well_typed_value(value: object) -> bool:
    kind = type(value)
    return kind is str or kind is bool or kind is int or (kind is float and math.isfinite(value))  # type: ignore[arg-type]


def _well_typed_str_list(value: object) -> tuple[str, ...] | None:
    """The strings of a list of non-empty strings, or None (``_str_list`` says why)."""
    if type(value) is not list and type(value) is not tuple:
        return None
    # C-level passes, no generator frame per element: lists of ids run to thousands
    if value and (set(map(type, value)) != _STR_ONLY or not all(map(str.strip, value))):
        return None
    return tuple(value)


_STR_ONLY = {str}


def _claim(value: object, path: str) -> Claim:
    obj = _exact_object(value, CLAIM_FIELDS, path)
    return Claim(
        key=_nonempty_str(obj["key"], _join(path, "key")),
        value=_fact_value(obj["value"], _join(path, "value")),
        unit=_optional_str(obj["unit"], _join(path, "unit")),
        polarity=_bool(obj["polarity"], _join(path, "polarity")),
        kind=_nonempty_str(obj["kind"], _join(path, "kind")),
        derived_from=_str_list(obj["derivedFrom"], _join(path, "derivedFrom")),
        text=_str(obj["text"], _join(path, "text")),
    )


_STATEMENT_KEYS = frozenset(STATEMENT_FIELDS)
_STATEMENT_KEYS_ALL = frozenset(STATEMENT_FIELDS + STATEMENT_OPTIONAL)


def _well_typed_statement(value: object) -> Statement | None:
    """The statement, when every field is what the schema asks; None sends it to
    ``_statement``, which says what is wrong (as ``_well_typed_claim`` for claims)."""
    if type(value) is not dict or not _STATEMENT_KEYS <= value.keys() <= _STATEMENT_KEYS_ALL:
        return None
    text, at, project = value["text"], value["at"], value["project"]
    contested, kind = value["contested"], value["kind"]
    speaker, part = value.get("speaker"), value.get("part")
    sources = _well_typed_str_list(value["derivedFrom"])
    claims = _well_typed_str_list(value["claims"])
    if (
        sources is None
        or claims is None
        or type(text) is not str
        or not text.strip()
        or (at is not None and type(at) is not str)
        or (project is not None and type(project) is not str)
        or (contested is not None and (type(contested) is not str or not contested.strip()))
        or (kind is not None and (type(kind) is not str or kind not in EVENT_KINDS))
        or (speaker is not None and type(speaker) is not str)
    ):
        return None
    if part is None:
        return Statement(text, sources, claims, at, project, contested, kind, speaker)
    if type(part) is not list or len(part) != 2:
        return None
    first, last = part
    if type(first) is not int or type(last) is not int or not 1 <= first <= last:
        return None
    return Statement(text, sources, claims, at, project, contested, kind, speaker, (first, last))


def _statement(value: object, path: str) -> Statement:
    obj = _exact_object(value, STATEMENT_FIELDS, path, STATEMENT_OPTIONAL)
    contested = _optional_str(obj["contested"], _join(path, "contested"))
    if contested is not None and not contested.strip():
        raise OutputRejected("empty_value", _join(path, "contested"), "null or a conflict id")
    kind = _optional_str(obj["kind"], _join(path, "kind"))
    if kind is not None and kind not in EVENT_KINDS:
        raise OutputRejected(
            "wrong_type", _join(path, "kind"), f"expected null or one of {', '.join(EVENT_KINDS)}"
        )
    return Statement(
        text=_nonempty_str(obj["text"], _join(path, "text")),
        derived_from=_str_list(obj["derivedFrom"], _join(path, "derivedFrom")),
        claims=_str_list(obj["claims"], _join(path, "claims")),
        at=_optional_str(obj["at"], _join(path, "at")),
        project=_optional_str(obj["project"], _join(path, "project")),
        contested=contested,
        kind=kind,
        speaker=_optional_str(obj.get("speaker"), _join(path, "speaker")),
        part=_part(obj.get("part"), _join(path, "part")),
    )


def _part(value: object, path: str) -> tuple[int, int] | None:
    """null, or ``[k, n]`` with 1 <= k <= n: the k-th of n numbered parts of one event."""
    if value is None:
        return None
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        and 1 <= value[0] <= value[1]
    ):
        return (value[0], value[1])
    raise OutputRejected("wrong_type", path, "expected null or [k, n] with 1 <= k <= n")


def _fact_value(value: object, path: str) -> FactValue:
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise OutputRejected("not_finite", path, repr(value))
        return value
    raise OutputRejected(
        "wrong_type", path, f"expected string, number or boolean, got {_type(value)}"
    )


def _list(value: object, path: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise OutputRejected("wrong_type", path, f"expected an array, got {_type(value)}")
    return list(value)


def _str_list(value: object, path: str) -> tuple[str, ...]:
    well_typed = _well_typed_str_list(value)
    if well_typed is not None:
        return well_typed
    items = _list(value, path)
    return tuple(_nonempty_str(v, f"{path}[{i}]") for i, v in enumerate(items))


def _checked(predicate: Callable[[object], bool], expected: str) -> Callable[[object, str], Any]:
    def check(value: object, path: str) -> Any:
        if not predicate(value):
            raise OutputRejected("wrong_type", path, f"expected {expected}, got {_type(value)}")
        return value

    return check


_str_checked = _checked(lambda v: isinstance(v, str), "a string")
_bool_checked = _checked(lambda v: isinstance(v, bool), "a boolean")


def _str(value: object, path: str) -> str:
    result: str = _str_checked(value, path)
    return result


def _nonempty_str(value: object, path: str) -> str:
    text = _str(value, path)
    if not text.strip():
        raise OutputRejected("empty_value", path, "must not be empty")
    return text


def _optional_str(value: object, path: str) -> str | None:
    return None if value is None else _str(value, path)


def _bool(value: object, path: str) -> bool:
    result: bool = _bool_checked(value, path)
    return result


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _type(value: object) -> str:
    if value is None:
        return "null"
    return {
        bool: "boolean",
        int: "number",
        float: "number",
        str: "string",
        list: "array",
        tuple: "array",
        dict: "object",
    }.get(type(value), type(value).__name__)
