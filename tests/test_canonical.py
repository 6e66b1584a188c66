"""JCS (RFC 8785) through the project's canonicalizer, on the reference vectors."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from memlineage.canonical import (
    canonical_bytes,
    content_hash,
    extended_input_root,
    input_root,
    input_root_state,
)
from memlineage.errors import BadInput
from memlineage.model import Fact, NewEvent

VECTORS = ["arrays", "french", "structures", "unicode", "values", "weird"]


@pytest.mark.parametrize("name", VECTORS)
def test_reference_vectors(shared_data: Path, name: str) -> None:
    source = json.loads((shared_data / "jcs" / "input" / f"{name}.json").read_text("utf-8"))
    expected = (shared_data / "jcs" / "output" / f"{name}.json").read_bytes()
    assert canonical_bytes(source) == expected.rstrip(b"\n")


def test_es6_number_serialization(shared_data: Path) -> None:
    lines = (shared_data / "jcs" / "es6testfile100k.txt").read_text("ascii").splitlines()
    assert len(lines) == 100_000
    wrong = []
    for line in lines:
        hex_bits, expected = line.split(",")
        value = struct.unpack(">d", bytes.fromhex(hex_bits.zfill(16)))[0]
        if canonical_bytes(value).decode() != expected:
            wrong.append(line)
    assert wrong == []


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "lone \ud800 surrogate", 2**60])
def test_values_json_cannot_carry_are_bad_input(bad: object) -> None:
    with pytest.raises(BadInput):
        canonical_bytes({"value": bad})


def test_event_hash_ignores_key_order_but_not_content() -> None:
    event = NewEvent(
        id="m-1", subject="u", text="Budget is 4,500 EUR", facts=(Fact("budget", 4500, "EUR"),)
    )
    reordered = dict(reversed(list(event.content().items())))
    assert content_hash(reordered) == content_hash(event.content())
    changed = NewEvent(
        id="m-1", subject="u", text="Budget is 4,050 EUR", facts=(Fact("budget", 4050, "EUR"),)
    )
    assert content_hash(changed.content()) != content_hash(event.content())


def test_input_root_is_independent_of_selection_order() -> None:
    pairs = [("m-1", "sha256:a"), ("m-2", "sha256:b"), ("m-3", "sha256:c")]
    assert input_root(pairs) == input_root(list(reversed(pairs)))
    assert input_root(pairs) != input_root(
        [("m-1", "sha256:a"), ("m-2", "sha256:x"), ("m-3", "sha256:c")]
    )


@settings(max_examples=500)
@given(st.lists(st.tuples(st.text(), st.text()), max_size=6))
def test_input_root_equals_the_hash_of_the_reference_bytes(pairs: list[tuple[str, str]]) -> None:
    ordered = sorted([i, h] for i, h in pairs)
    try:
        expected = "sha256:" + hashlib.sha256(rfc8785.dumps(ordered)).hexdigest()
    except (rfc8785.CanonicalizationError, UnicodeEncodeError):
        with pytest.raises(BadInput):
            input_root(pairs)
        return
    assert input_root(pairs) == expected


ids = st.text(st.characters(blacklist_categories=("Cs",)), max_size=4)


@settings(max_examples=500)
@given(st.lists(st.lists(st.tuples(ids, ids), max_size=5), min_size=1, max_size=5))
def test_a_root_hashed_on_from_an_earlier_one_is_the_root_of_the_whole_list(
    runs: list[list[tuple[str, str]]],
) -> None:
    """A growing selection: each run's new pairs put in place by id (in any order, before
    or after the old ones) give the root of every pair so far."""
    seen: set[str] = set()
    pairs: list[tuple[str, str]] = []
    root, state = input_root_state([])
    for run in runs:
        added = [(i, h) for i, h in dict(run).items() if i not in seen]
        seen.update(i for i, _ in added)
        pairs += added
        assert state is not None
        found = extended_input_root(state, added)
        assert found is not None  # ids are new and strings: always placed
        root, state = found
        assert root == input_root(pairs)
    assert state is not None and state.count == len(pairs)


def test_new_ids_go_in_their_place_and_a_repeated_one_hashes_the_whole_list() -> None:
    _, state = input_root_state([("m-2", "sha256:b"), ("m-4", "sha256:d")])
    assert state is not None
    found = extended_input_root(state, [("m-3", "sha256:c"), ("m-1", "sha256:a")])
    assert found is not None
    whole = [("m-1", "sha256:a"), ("m-2", "sha256:b"), ("m-3", "sha256:c"), ("m-4", "sha256:d")]
    assert found[0] == input_root(whole)
    assert state.ids == ["m-2", "m-4"]  # the state it went on from is unchanged
    assert extended_input_root(state, [("m-2", "sha256:x")]) is None
    with pytest.raises(BadInput):  # as input_root refuses it
        extended_input_root(state, [("m-\ud800", "sha256:e")])


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.text()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=2000)
@given(json_values)
def test_fast_path_matches_the_reference_implementation(value: object) -> None:
    try:
        expected = rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, UnicodeEncodeError):
        with pytest.raises(BadInput):
            canonical_bytes(value)
        return
    assert canonical_bytes(value) == expected


@pytest.mark.parametrize(
    "text", ['quote " and \\ back', "tab\t nl\n \x00 \x1f \x7f", "é 😀 \u2028"]
)
def test_fast_path_string_escapes_match_jcs(text: str) -> None:
    assert canonical_bytes({"t": text}) == rfc8785.dumps({"t": text})


@settings(max_examples=500)
@given(
    st.text(),
    st.lists(st.text(min_size=1), max_size=3),
    st.one_of(
        st.text(),
        st.integers(-(2**60), 2**60),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
    ),
)
def test_event_hash_equals_the_hash_of_the_reference_bytes(
    text: str, taint: list[str], value: object
) -> None:
    event = NewEvent(
        id="m-1", subject="u", text=text, taint=tuple(taint), facts=(Fact("k", value),)
    )  # type: ignore[arg-type]
    try:
        expected = "sha256:" + hashlib.sha256(rfc8785.dumps(event.content())).hexdigest()
    except (rfc8785.CanonicalizationError, UnicodeEncodeError):
        with pytest.raises(BadInput):
            _ = event.content_hash
        return
    assert event.content_hash == expected
