"""Validation of client input before anything is stored: RFC 3339 times, JSON Lines, fields.

Pure logic, no store: every refusal is a BadInput naming the field (and the
line, for JSONL). The same checks on both backends are in test_cli_errors.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memlineage.api import check_tenant
from memlineage.errors import BadInput
from memlineage.meaning.extract import extract_items
from memlineage.model import Event, NewEvent
from memlineage.raw.ingest import (
    check_event,
    normalize_time,
    parse_event,
    parse_jsonl,
    parse_jsonl_numbered,
    split_lines,
)


def event(**extra: Any) -> dict[str, Any]:
    return {"id": "m-1", "subject": "user-7", "text": "Never deploy on Fridays.", **extra}


def refusal(obj: Any) -> BadInput:
    with pytest.raises(BadInput) as err:
        parse_event(obj)
    return err.value


# -- at: RFC 3339, normalized, keeping its offset --


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("2026-03-04T23:00:00-07:00", "2026-03-04T23:00:00-07:00"),
        ("2026-03-04t23:00:00z", "2026-03-04T23:00:00Z"),
        ("2026-03-04T23:00:00+00:00", "2026-03-04T23:00:00Z"),
        ("2026-03-04T23:00:00-00:00", "2026-03-04T23:00:00Z"),
        ("2026-03-04 23:00:00+05:30", "2026-03-04T23:00:00+05:30"),
        ("2026-03-04T23:00:00.5+01:00", "2026-03-04T23:00:00.500000+01:00"),
        ("2026-03-04T23:00:00.000Z", "2026-03-04T23:00:00Z"),
        ("2026-03-04T23:00:00.123456000Z", "2026-03-04T23:00:00.123456Z"),
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
        ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"),
    ],
)
def test_at_is_normalized_and_keeps_its_own_offset(given: str, stored: str) -> None:
    assert normalize_time(given) == stored
    assert parse_event(event(at=given)).at == stored


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("2026-W10-3T10:00:00Z", "RFC 3339"),  # ISO week date
        ("20260304T230000Z", "RFC 3339"),  # ISO basic format
        ("2026-03-04T230000Z", "RFC 3339"),
        ("2026-03-04T23:00Z", "RFC 3339"),  # no seconds
        ("2026-03-04T23:00:00", "RFC 3339"),  # no offset
        ("2026-03-04T23:00:00,5Z", "RFC 3339"),  # a comma before the fraction
        ("2026-03-04T23:00:00+0700", "RFC 3339"),
        ("2026-03-04", "date alone"),
        ("2026-03-04T23:00:00.1234567Z", "microsecond"),
        ("2016-12-31T23:59:60Z", "leap second"),
        ("2026-13-04T23:00:00Z", "valid date-time"),
        ("2026-02-30T23:00:00Z", "valid date-time"),
        ("2026-03-04T24:00:00Z", "valid date-time"),
        ("2026-03-04T23:00:00+24:00", "valid date-time"),
        ("0000-01-01T00:00:00Z", "valid date-time"),
        ("0001-01-01T00:00:00+01:00", "valid date-time"),  # before year 1 in UTC
        ("9999-12-31T23:59:59-01:00", "valid date-time"),  # after year 9999 in UTC
        ("２０２６-03-04T23:00:00Z", "RFC 3339"),  # full-width digits
        ("tomorrow", "RFC 3339"),
    ],
)
def test_at_outside_rfc_3339_is_refused_naming_the_field(given: str, says: str) -> None:
    err = refusal(event(at=given))
    assert err.field == "at" and says in err.reason


def test_relative_dates_resolve_on_the_events_local_day() -> None:
    # 23:00 on March 4th in UTC-7 is already March 5th in UTC: "tomorrow" is the 5th.
    new = parse_event(event(text="The review is tomorrow.", at="2026-03-04T23:00:00-07:00"))
    items = extract_items([Event.stored(new, 1, "2026-03-05T06:00:00Z")])
    assert [(i.kind, i.value) for i in items] == [("date", "2026-03-05")]


def test_the_hash_covers_the_offset() -> None:
    local = parse_event(event(at="2026-03-04T23:00:00-07:00"))
    utc = parse_event(event(at="2026-03-05T06:00:00Z"))
    spelled = parse_event(event(at="2026-03-04t23:00:00.000-07:00"))
    assert local.content_hash != utc.content_hash
    assert local.content_hash == spelled.content_hash


# -- the event object --


def test_duplicate_keys_are_refused_in_events_and_facts() -> None:
    with pytest.raises(BadInput) as err:
        parse_jsonl(['{"id": "m-1", "subject": "u", "text": "a", "text": "b"}'])
    assert (err.value.line, err.value.field) == (1, "text")
    line = '{"id": "m-1", "subject": "u", "text": "a", "facts": [{"key": "k", "key": "j"}]}'
    with pytest.raises(BadInput) as err:
        parse_jsonl(["", line])
    assert (err.value.line, err.value.field) == (2, "key")


@pytest.mark.parametrize("facts", [False, 0, "", {}, "k=v", True])
def test_facts_that_are_not_a_list_are_refused(facts: Any) -> None:
    assert refusal(event(facts=facts)).field == "facts"


def test_facts_null_or_empty_are_no_facts() -> None:
    assert parse_event(event(facts=None)).facts == ()
    assert parse_event(event(facts=[])).facts == ()


@pytest.mark.parametrize(
    ("fact", "field"),
    [
        ({"key": "budget", "value": 5, "kind": ""}, "facts[0].kind"),
        ({"key": "budget", "value": 5, "kind": " \t"}, "facts[0].kind"),
        ({"key": "budget", "value": 5, "kind": None}, "facts[0].kind"),
        ({"key": "", "value": 5}, "facts[0].key"),
        ({"key": "  ", "value": 5}, "facts[0].key"),
    ],
)
def test_fact_keys_and_kinds_the_parser_would_refuse_are_refused_at_add(
    fact: dict[str, Any], field: str
) -> None:
    assert refusal(event(facts=[fact])).field == field


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"id": "m\x001"}, "id"),
        ({"subject": "user\x007"}, "subject"),
        ({"text": "Never \x00 deploy"}, "text"),
        ({"project": "orion\x00"}, "project"),
        ({"supersedes": "m\x000"}, "supersedes"),
        ({"taint": ["web\x00"]}, "taint"),
        ({"facts": [{"key": "k\x00", "value": 1}]}, "facts[0].key"),
        ({"facts": [{"key": "k", "value": "v\x00"}]}, "facts[0].value"),
        ({"facts": [{"key": "k", "value": 1, "unit": "km\x00"}]}, "facts[0].unit"),
        ({"facts": [{"key": "k", "value": 1, "kind": "fact\x00"}]}, "facts[0].kind"),
    ],
)
def test_nul_is_refused_in_every_string_naming_the_field(extra: dict[str, Any], field: str) -> None:
    err = refusal(event(**extra))
    assert err.field == field and "NUL" in err.reason


@pytest.mark.parametrize("name", ["project", "supersedes"])
def test_blank_optional_identifiers_are_refused(name: str) -> None:
    assert refusal(event(**{name: " "})).field == name
    assert refusal(event(**{name: ""})).field == name


@pytest.mark.parametrize("tenant", ["", "  ", "acme\x00", " acme", "a" * 201])
def test_blank_odd_or_long_tenants_are_refused(tenant: str) -> None:
    with pytest.raises(BadInput) as err:
        check_tenant(tenant)
    assert err.value.field == "tenant"


def test_events_built_in_python_pass_the_same_checks() -> None:
    with pytest.raises(BadInput) as err:
        check_event(NewEvent(id="m-1", subject="u", text="x", kind=None, at="2026-03-04"))
    assert err.value.field == "at"
    odd = NewEvent(id="m-1", subject="u", text="x", at="2026-03-04t10:00:00z", taint=("b", "a"))
    assert check_event(odd) == NewEvent(
        id="m-1", subject="u", text="x", at="2026-03-04T10:00:00Z", taint=("a", "b")
    )
    fine = parse_event(event())
    assert check_event(fine) is fine


# -- JSON Lines --


def test_lines_split_on_newline_only_keeping_unicode_line_separators() -> None:
    texts = ["a\u2028b", "c\u2029d", "e\u0085f"]
    data = "\r\n".join(json.dumps(event(id=f"m-{i}", text=t), ensure_ascii=False) for i, t in
                       enumerate(texts)).encode()  # fmt: skip
    events = parse_jsonl(split_lines(data))
    assert [e.text for e in events] == texts


def test_blank_lines_are_skipped_and_lines_keep_their_numbers() -> None:
    lines = ["", json.dumps(event(id="m-1")), " \t", json.dumps(event(id="m-2"))]
    events, numbers = parse_jsonl_numbered(lines)
    assert [e.id for e in events] == ["m-1", "m-2"] and numbers == [2, 4]


def test_a_line_of_unicode_spaces_is_not_blank_but_not_json() -> None:
    with pytest.raises(BadInput) as err:
        parse_jsonl([json.dumps(event()), "\u2028"])
    assert err.value.line == 2


def test_non_utf8_names_its_line() -> None:
    data = json.dumps(event()).encode() + b"\n" + b'{"id": "m-2", "text": "caf\xe9"}\n'
    with pytest.raises(BadInput) as err:
        split_lines(data, "stdin")
    assert err.value.line == 2 and "stdin is not UTF-8" in err.value.reason


def test_json_nested_ten_thousand_deep_is_bad_input_naming_the_line() -> None:
    with pytest.raises(BadInput) as err:
        parse_jsonl([json.dumps(event()), "[" * 10_000 + "]" * 10_000])
    assert err.value.line == 2 and "nested too deeply" in err.value.reason


@pytest.mark.parametrize(
    "line",
    [
        '{"id": "m-1", "subject": "u", "text": "x", "facts": [{"key": "k", "value": NaN}]}',
        '{"id": "m-1", "subject": "u", "text": "x", "facts": [{"key": "k", "value": 1e400}]}',
        '{"id": "m-1", "subject": "u", "text": "x", "facts": [{"key": "k", "value": '
        + "9" * 5000
        + "}]}",
        '{"id": "m-1", "subject": "u", "text": "x", "facts": [{"key": "k", "value": '
        + str(2**60)
        + "}]}",
    ],
    ids=["nan", "overflowing-float", "5000-digits", "beyond-2**53"],
)
def test_numbers_json_cannot_carry_are_bad_input(line: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_jsonl([line])
    assert err.value.line == 1


def test_an_id_twice_in_one_file_with_other_content_names_the_second_line() -> None:
    lines = [json.dumps(event()), json.dumps(event()), "", json.dumps(event(text="Other."))]
    with pytest.raises(BadInput) as err:
        parse_jsonl(lines)
    assert (err.value.line, err.value.field) == (4, "id") and "line 1" in err.value.reason
    assert len(parse_jsonl(lines[:2])) == 2  # the same content twice is a retry, not an error


def test_a_byte_order_mark_at_the_start_is_ignored_and_elsewhere_refused() -> None:
    line = json.dumps(event()).encode()
    assert [e.id for e in parse_jsonl(split_lines(b"\xef\xbb\xbf" + line + b"\n"))] == ["m-1"]
    with pytest.raises(BadInput) as err:
        parse_jsonl(split_lines(line + b"\n\xef\xbb\xbf" + line))
    assert err.value.line == 2


# -- speaker --


def test_an_event_without_speaker_keeps_the_hash_it_had_before_the_field() -> None:
    from memlineage.canonical import content_hash

    before = {  # the content fields of an event before ``speaker`` existed
        "id": "m-1",
        "subject": "user-7",
        "text": "Never deploy on Fridays.",
        "at": None,
        "kind": None,
        "project": None,
        "trust": "user",
        "taint": [],
        "facts": [],
        "supersedes": None,
    }
    assert parse_event(event()).content_hash == content_hash(before)


def test_the_speaker_is_kept_and_covered_by_the_hash() -> None:
    said = parse_event(event(speaker="Caroline"))
    assert said.speaker == "Caroline"
    assert said.content_hash != parse_event(event()).content_hash
    assert said.content_hash != parse_event(event(speaker="Melanie")).content_hash


@pytest.mark.parametrize("bad", ["", " ", " Caroline", "x" * 201, 7])
def test_a_blank_odd_or_long_speaker_is_refused_naming_the_field(bad: Any) -> None:
    assert refusal(event(speaker=bad)).field == "speaker"
