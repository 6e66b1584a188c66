"""The hot paths of a recall that skip a general mechanism give what it gives (pure)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from dateutil.parser import isoparse
from hypothesis import given
from hypothesis import strategies as st

from memlineage.meaning.values import read_timestamp
from memlineage.model import Event, Fact
from memlineage.recall.context import Passage, new_passage
from memlineage.recall.prompt import _json, _json_line, _line
from memlineage.store.rows import event_from_row, event_row

maybe_text = st.none() | st.text(max_size=12)


@given(
    text=st.text(max_size=40),
    at=maybe_text,
    kind=maybe_text,
    project=maybe_text,
    speaker=maybe_text,
    taint=st.lists(st.text(max_size=5), max_size=2),
    facts=st.booleans(),
)
def test_an_event_read_from_its_row_is_the_event_its_constructor_makes(
    text: str,
    at: str | None,
    kind: str | None,
    project: str | None,
    speaker: str | None,
    taint: list[str],
    facts: bool,
) -> None:
    made = Event(
        id="e-1",
        subject="s",
        text=text,
        at=at,
        kind=kind,
        project=project,
        taint=tuple(taint),
        facts=(Fact("price", 12, "EUR"),) if facts else (),
        supersedes=None,
        speaker=speaker,
        seq=7,
        hash="h",
        recorded_at="2026-01-01T00:00:00Z",
    )
    row = event_row("t", made, made.seq, made.hash, made.recorded_at)[1:]
    read = event_from_row(row)
    assert read == made
    assert list(vars(read)) == list(vars(made))  # every field, in the constructor's order
    assert repr(read) == repr(made) and hash(read) == hash(made)


@given(
    text=st.text(max_size=30),
    at=maybe_text,
    conflict=maybe_text,
    project=maybe_text,
    speaker=maybe_text,
    part=st.none() | st.tuples(st.integers(1, 3), st.integers(3, 5)),
    similarity=st.none() | st.floats(-1, 1),
    must_keep=st.booleans(),
)
def test_a_new_passage_is_the_passage_its_constructor_makes(
    text: str,
    at: str | None,
    conflict: str | None,
    project: str | None,
    speaker: str | None,
    part: tuple[int, int] | None,
    similarity: float | None,
    must_keep: bool,
) -> None:
    def make(build: type[Passage] | object) -> Passage:
        assert callable(build)
        found = build(
            "s",
            text,
            ("e-1",),
            at,
            "facts",
            "cold",
            must_keep,
            3,
            conflict=conflict,
            project=project,
            speaker=speaker,
            part=part,
            similarity=similarity,
        )
        assert isinstance(found, Passage)
        return found

    made, fast = make(Passage), make(new_passage)
    assert fast == made and repr(fast) == repr(made)
    assert list(vars(fast)) == list(vars(made))


@given(body=st.text(), date=st.none() | st.text(max_size=12), conflict=maybe_text)
def test_a_json_line_is_what_json_dumps_writes(
    body: str, date: str | None, conflict: str | None
) -> None:
    passage = Passage("s", body, ("e",), None, "facts", "raw", False, 0, conflict=conflict)
    line = _line(passage)
    line[0] = body  # the body as given, whatever passage_body makes of it
    line[1] = date
    assert _json_line(body, date, conflict) == _json(line).rstrip("\n")
    assert json.loads(_json_line(body, date, conflict)) == line


def _two(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(lambda n: f"{n:02d}")


# timestamps of the shape the fast path reads, out-of-range fields included
_stamps = st.builds(
    lambda y, mo, d, h, mi, s, frac, zone: f"{y:04d}-{mo}-{d}T{h}:{mi}:{s}{frac}{zone}",
    st.integers(0, 9999),
    _two(0, 13),
    _two(0, 32),
    _two(0, 25),
    _two(0, 61),
    _two(0, 61),
    st.sampled_from(["", ".5", ".123", ".123456", ".1234567"]),
    st.sampled_from(["", "Z"])
    | st.builds(
        lambda sign, h, m: f"{sign}{h}:{m}", st.sampled_from("+-"), _two(0, 25), _two(0, 61)
    ),
)


def _as_written(parsed: datetime) -> tuple[datetime, timedelta | None]:
    """Wall time and offset (None when naive): what two readers must agree on."""
    return parsed.replace(tzinfo=None), parsed.utcoffset()


@given(_stamps)
def test_a_timestamp_read_on_the_fast_path_is_the_instant_dateutil_reads(at: str) -> None:
    try:
        expected = _as_written(isoparse(at))
    except (ValueError, OverflowError):
        expected = None
    read = read_timestamp(at)
    assert (None if read is None else _as_written(read)) == expected
