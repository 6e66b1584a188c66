"""The strict output parser: exactly the schema, a coded rejection for anything else."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlineage.consolidation.parse import (
    CLAIM_FIELDS,
    CODES,
    OUTPUT_FIELDS,
    STATEMENT_FIELDS,
    OutputRejected,
    parse_output,
)
from memlineage.errors import MemlineageError
from memlineage.model import EVENT_KINDS, Claim, Output, Statement


def good() -> dict[str, Any]:
    return Output(
        claims=(
            Claim("orion/number/run", 5, "kilometer", True, "number", ("m-1",), "5 km"),
            Claim("orion/constraint/deploy", "never deploy on fridays", None, False,
                  "constraint", ("m-2", "m-3"), ""),
        ),
        open_items=("m-4",),
        unresolved_conflicts=("c1",),
        cold=("m-9",),
        statements=(
            Statement("The daily run is 5 km.", ("m-1",), ("orion/number/run",),
                      "2024-03-01T10:00:00Z", "orion", None, "fact"),
            Statement("My office is in Madrid.", ("m-5",), (), None, None, "c1", None),
        ),
    ).to_json()  # fmt: skip


def rejected(raw: object) -> OutputRejected:
    with pytest.raises(OutputRejected) as info:
        parse_output(raw)
    assert info.value.code in CODES
    return info.value


def test_accepts_what_output_to_json_emits() -> None:
    output = parse_output(good())
    assert output.to_json() == good()
    assert output.claims[1].derived_from == ("m-2", "m-3")


def test_accepts_json_text_and_bytes() -> None:
    assert parse_output(json.dumps(good())).to_json() == good()
    assert parse_output(json.dumps(good()).encode()).to_json() == good()


@pytest.mark.parametrize(
    "wrap",
    [
        "```json\n{}\n```",
        "```\n{}\n```",
        "  ```JSON\n{}\n```\n",
        "```json\r\n{}\r\n```",
    ],
)
def test_one_fenced_block_around_a_valid_document_is_accepted(wrap: str) -> None:
    text = json.dumps(good(), indent=2)
    assert parse_output(wrap.replace("{}", text)) == parse_output(text)


@pytest.mark.parametrize(
    "wrap",
    [
        "Here it is:\n```json\n{}\n```",  # words before the fence
        "```json\n{}\n```\nHope this helps!",  # words after it
        "```json\n{}\n```\n```json\n{}\n```",  # two blocks
        "```json\n{}",  # never closed
        "```python\n{}\n```",  # not JSON's fence
        "```json {} ```",  # not a block
    ],
)
def test_anything_but_exactly_one_fenced_block_is_not_json(wrap: str) -> None:
    text = json.dumps(good())
    with pytest.raises(OutputRejected) as raised:
        parse_output(wrap.replace("{}", text))
    assert raised.value.code == "not_json"


def test_inside_a_fence_the_parser_is_as_strict() -> None:
    doc = good()
    doc["extra"] = 1
    with pytest.raises(OutputRejected) as raised:
        parse_output(f"```json\n{json.dumps(doc)}\n```")
    assert (raised.value.code, raised.value.field) == ("unknown_field", "extra")


def test_rejection_is_a_memlineage_error_with_exit_code_1() -> None:
    exc = rejected({})
    assert isinstance(exc, MemlineageError)
    assert exc.exit_code == 1


@pytest.mark.parametrize("name", OUTPUT_FIELDS)
def test_missing_output_field(name: str) -> None:
    raw = good()
    del raw[name]
    exc = rejected(raw)
    assert (exc.code, exc.field) == ("missing_field", name)


@pytest.mark.parametrize("name", CLAIM_FIELDS)
def test_missing_claim_field(name: str) -> None:
    raw = good()
    del raw["claims"][1][name]
    exc = rejected(raw)
    assert (exc.code, exc.field) == ("missing_field", f"claims[1].{name}")


@pytest.mark.parametrize(
    ("path", "bad", "field"),
    [
        (("claims",), {}, "claims"),
        (("openItems",), "m-4", "openItems"),
        (("unresolvedConflicts",), [1], "unresolvedConflicts[0]"),
        (("cold",), None, "cold"),
        (("statements",), {}, "statements"),
        (("statements", 0, "text"), 5, "statements[0].text"),
        (("statements", 0, "derivedFrom"), "m-1", "statements[0].derivedFrom"),
        (("statements", 0, "claims"), [3], "statements[0].claims[0]"),
        (("statements", 0, "at"), 20240301, "statements[0].at"),
        (("statements", 0, "project"), ["orion"], "statements[0].project"),
        (("statements", 0, "contested"), False, "statements[0].contested"),
        (("statements", 0, "kind"), "rumour", "statements[0].kind"),
        (("claims", 0, "key"), 7, "claims[0].key"),
        (("claims", 0, "value"), None, "claims[0].value"),
        (("claims", 0, "value"), [5], "claims[0].value"),
        (("claims", 0, "unit"), 5, "claims[0].unit"),
        (("claims", 0, "polarity"), 1, "claims[0].polarity"),
        (("claims", 0, "polarity"), "true", "claims[0].polarity"),
        (("claims", 0, "kind"), None, "claims[0].kind"),
        (("claims", 0, "derivedFrom"), "m-1", "claims[0].derivedFrom"),
        (("claims", 0, "derivedFrom"), [None], "claims[0].derivedFrom[0]"),
        (("claims", 0, "text"), None, "claims[0].text"),
    ],
)
def test_mistyped_field(path: tuple[Any, ...], bad: object, field: str) -> None:
    raw = good()
    target: Any = raw
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = bad
    exc = rejected(raw)
    assert (exc.code, exc.field) == ("wrong_type", field)


def test_summary_is_not_a_generator_field() -> None:
    """The summary is rendered from the statements; a generator may not write one."""
    raw = good()
    raw["summary"] = "Everything is fine."
    exc = rejected(raw)
    assert (exc.code, exc.field) == ("unknown_field", "summary")


@pytest.mark.parametrize("name", STATEMENT_FIELDS)
def test_missing_statement_field(name: str) -> None:
    raw = good()
    del raw["statements"][0][name]
    exc = rejected(raw)
    assert (exc.code, exc.field) == ("missing_field", f"statements[0].{name}")


def test_empty_statement_text_and_contested_are_rejected() -> None:
    raw = good()
    raw["statements"][0]["text"] = " "
    assert rejected(raw).code == "empty_value"
    raw = good()
    raw["statements"][1]["contested"] = ""
    exc = rejected(raw)
    assert (exc.code, exc.field) == ("empty_value", "statements[1].contested")


def test_field_paths_name_the_offending_element() -> None:
    raw = good()
    raw["claims"][1]["derivedFrom"] = ["m-2", 3]
    exc = rejected(raw)
    assert exc.field == "claims[1].derivedFrom[1]"


def test_unknown_fields_are_rejected() -> None:
    raw = good()
    raw["extra"] = 1
    assert rejected(raw).code == "unknown_field"
    raw = good()
    raw["claims"][0]["confidence"] = 0.9
    exc = rejected(raw)
    assert (exc.code, exc.field) == ("unknown_field", "claims[0].confidence")


@pytest.mark.parametrize("raw", [None, 1, "[]", [], "not json", b"\xff", "{", "NaN"])
def test_not_an_object(raw: object) -> None:
    assert rejected(raw).code in {"not_object", "not_json", "not_finite"}


def test_non_finite_numbers_are_rejected() -> None:
    raw = good()
    raw["claims"][0]["value"] = float("nan")
    assert rejected(raw).code == "not_finite"
    text = json.dumps(good()).replace('"value": 5', '"value": Infinity')
    assert rejected(text).code == "not_finite"


def test_empty_keys_and_ids_are_rejected() -> None:
    raw = good()
    raw["claims"][0]["key"] = "  "
    assert rejected(raw).code == "empty_value"
    raw = good()
    raw["openItems"] = [""]
    assert rejected(raw).code == "empty_value"


def test_deep_nesting_is_a_rejection() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert rejected(deep).code == "not_json"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


def _near_valid() -> st.SearchStrategy[Any]:
    """A valid output with one field replaced by arbitrary JSON: mistakes close to the schema."""

    def swap(data: tuple[Any, ...]) -> Any:
        where, value = data
        raw = good()
        if where < len(OUTPUT_FIELDS):
            raw[OUTPUT_FIELDS[where]] = value
        elif where < len(OUTPUT_FIELDS) + len(CLAIM_FIELDS):
            raw["claims"][0][CLAIM_FIELDS[where - len(OUTPUT_FIELDS)]] = value
        else:
            name = STATEMENT_FIELDS[where - len(OUTPUT_FIELDS) - len(CLAIM_FIELDS)]
            raw["statements"][0][name] = value
        return raw

    last = len(OUTPUT_FIELDS) + len(CLAIM_FIELDS) + len(STATEMENT_FIELDS) - 1
    return st.tuples(st.integers(0, last), json_values).map(swap)


@settings(max_examples=400)
@given(st.one_of(json_values, _near_valid(), st.text(), st.binary()))
def test_never_any_other_exception(raw: object) -> None:
    try:
        output = parse_output(copy.deepcopy(raw))
    except OutputRejected as exc:
        assert exc.code in CODES
    else:
        assert isinstance(output, Output)


claims = st.builds(
    Claim,
    key=st.text(min_size=1).filter(str.strip),
    value=st.one_of(st.text(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.booleans()),
    unit=st.one_of(st.none(), st.text()),
    polarity=st.booleans(),
    kind=st.text(min_size=1).filter(str.strip),
    derived_from=st.lists(st.text(min_size=1).filter(str.strip), max_size=3).map(tuple),
    text=st.text(),
)  # fmt: skip
ids = st.lists(st.text(min_size=1).filter(str.strip), max_size=3).map(tuple)
nonempty = st.text(min_size=1).filter(str.strip)
statements = st.builds(
    Statement,
    text=nonempty,
    derived_from=ids,
    claims=ids,
    at=st.one_of(st.none(), st.text()),
    project=st.one_of(st.none(), st.text()),
    contested=st.one_of(st.none(), nonempty),
    kind=st.one_of(st.none(), st.sampled_from(EVENT_KINDS)),
)
outputs = st.builds(
    Output,
    claims=st.lists(claims, max_size=4).map(tuple),
    open_items=ids,
    unresolved_conflicts=ids,
    cold=ids,
    statements=st.lists(statements, max_size=4).map(tuple),
)


@given(outputs)
def test_round_trip_of_any_valid_output(output: Output) -> None:
    assert parse_output(output.to_json()) == output
    assert parse_output(json.dumps(output.to_json())) == output


@pytest.mark.parametrize("part", [[True, 2], [2, 1], [0, 1], [1], (1, 2), [1.0, 2], "1/2"])
def test_a_statement_part_is_two_ordered_ints_or_rejected(part: object) -> None:
    """Whether a statement takes the well-typed path or the checked one, the answer is the same."""
    doc = good()
    doc["statements"][0]["part"] = [1, 2]
    assert parse_output(doc).statements[0].part == (1, 2)
    doc["statements"][0]["part"] = part
    with pytest.raises(OutputRejected) as raised:
        parse_output(doc)
    assert raised.value.field == "statements[0].part"


def test_a_str_subclass_is_read_as_the_checked_path_reads_it() -> None:
    class Text(str):
        pass

    doc = good()
    expected = parse_output(copy.deepcopy(doc))
    statement = doc["statements"][0]
    statement["text"], statement["derivedFrom"] = Text(statement["text"]), [Text("m-1")]
    doc["openItems"] = [Text("m-4")]
    assert parse_output(doc) == expected
