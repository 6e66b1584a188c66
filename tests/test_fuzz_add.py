"""Properties of ``add`` over generated input (hypothesis, bounded in examples and time).

1. Whatever ``add`` accepts, the built-in generator consolidates to a
   publishable artifact: validation refuses up front what a later stage
   would refuse, so no event can block its subject forever.
2. Random JSON Lines, valid and invalid, over several subjects, through the
   command line on both backends: never a traceback; every refusal is exit 2
   with one line naming a line; a refused file changes no table. Files share
   a few ids, so the store's own refusals (an id stored with other content,
   a replacement of a missing event or of another subject's, a cycle) are
   exercised too.
"""

from __future__ import annotations

import io
import itertools
import json
import string
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlineage import Memory
from memlineage.errors import BadInput
from memlineage.interfaces.cli import main
from memlineage.model import EVENT_KINDS, TRUST_LEVELS
from storedump import dump

# -- generated events: mostly valid, with the odd value a user really sends --

_ids = st.text(string.ascii_letters + string.digits + "-_:.", min_size=1, max_size=12)
_words = st.text(min_size=0, max_size=80)  # any Unicode, NUL and lone surrogates included
_sentences = st.lists(
    st.sampled_from(
        [
            "Never deploy on Fridays",
            "I prefer tea",
            "Budget is at most 4,500 EUR",
            "The review is tomorrow",
            "Run 5 km on 2026-03-04",
            "Ticket ORION-12 needs 30% more",
            "Do not email after 9 pm",
            "Grant read:repo but not write:repo",
            "It is not untrue that we use $1",
        ]
    )
    | _words,
    min_size=1,
    max_size=4,
).map(". ".join)


@st.composite
def _times(draw: st.DrawFn) -> str:
    instant = draw(
        st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2100, 1, 1))
    ).replace(tzinfo=UTC)
    minutes = draw(st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59))
    local = instant.astimezone(timezone(timedelta(minutes=minutes)))
    text = local.isoformat()
    return draw(st.sampled_from([text, text.replace("T", "t"), text.replace("+00:00", "z")]))


_fact_values = (
    st.text(max_size=20)
    | st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
)
_facts = st.fixed_dictionaries(
    {"key": st.text(min_size=0, max_size=20), "value": _fact_values},
    optional={
        "unit": st.none()
        | st.sampled_from(["km", "EUR", "%", "MB", "h", ""])
        | st.text(max_size=4),
        "polarity": st.booleans(),
        "kind": st.sampled_from([*EVENT_KINDS, "money", "number", "conflict"])
        | st.text(max_size=8),
    },
)


def _events(
    subjects: list[str], ids: st.SearchStrategy[str] = _ids, replaces: bool = False
) -> st.SearchStrategy[dict[str, Any]]:
    optional = {"supersedes": ids} if replaces else {}
    return st.fixed_dictionaries(
        {"id": ids, "subject": st.sampled_from(subjects), "text": _sentences},
        optional={
            **optional,
            "at": _times() | st.text(max_size=25),
            "kind": st.sampled_from(EVENT_KINDS),
            "project": _ids | _words,
            "trust": st.sampled_from(TRUST_LEVELS),
            "facts": st.lists(_facts, max_size=3),
            "taint": st.lists(st.sampled_from(["web", "prompt-injection", " ", ""]), max_size=2),
        },
    )


_tenants = (f"prop-{n}" for n in itertools.count())


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(batch=st.lists(_events(["user-7"]), min_size=1, max_size=3, unique_by=lambda e: e["id"]))
def test_whatever_add_accepts_consolidates_to_a_publishable_artifact(
    tmp_path: Path, batch: list[dict[str, Any]]
) -> None:
    with Memory(str(tmp_path / "prop.db"), tenant=next(_tenants)) as memory:
        try:
            memory.add(batch)
        except BadInput:
            return  # refused up front: nothing stored, nothing to consolidate
        result = memory.consolidate("user-7")
        gate = result.artifact.gate
        assert result.switched, (result.status, result.reason, gate)


# -- random JSON Lines through the command line --


def _mangled(event: dict[str, Any]) -> st.SearchStrategy[str]:
    """One line: the event as JSON, or broken in one of the ways users break it."""
    line = json.dumps(event, ensure_ascii=False)
    return st.sampled_from(
        [
            *[line] * 24,  # mostly whole lines, so that files reach the store's own checks
            line[: len(line) // 2],  # cut short
            line.replace('"text"', '"txt"', 1),  # an unknown field
            line.replace("}", ', "id": "again"}', 1),  # a duplicate key
            line.replace("}", ', "facts": false}', 1),
            line.replace('"subject": "', '"subject": "\\u0000', 1),
            "[" * 3000 + "]" * 3000,
            json.dumps([event]),  # not an object
            "",  # a blank line
            "\u2028",
        ]
    )


# Few ids, so that files reuse ids stored by earlier files (with other content: refused)
# and replace events of this file or of earlier ones, in this subject or another.
_fuzz_ids = st.sampled_from([f"m-{n}" for n in range(8)])


def _whole_events(subjects: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Events whose fields are valid: the refusals come from mangled lines and the store."""
    return st.fixed_dictionaries(
        {"id": _fuzz_ids, "subject": st.sampled_from(subjects), "text": _sentences},
        optional={
            "at": _times(),
            "kind": st.sampled_from(EVENT_KINDS),
            "supersedes": _fuzz_ids,
            "facts": st.lists(_facts, max_size=2),
        },
    )


def _jsonl(subjects: list[str]) -> st.SearchStrategy[list[str]]:
    events = _whole_events(subjects) | _events(subjects, _fuzz_ids, replaces=True)
    return st.lists(events.flatmap(_mangled), min_size=1, max_size=6)


def _add(db: str, path: Path) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["add", str(path), "--db", db, "--tenant", "fuzz", "--json"], stdout=out)
    return code, out.getvalue()


@pytest.mark.parametrize("examples", [60])
def test_random_jsonl_is_stored_whole_or_refused_naming_a_line_sqlite(
    tmp_path: Path, examples: int
) -> None:
    _fuzz(str(tmp_path / "fuzz.db"), tmp_path, examples)


def test_random_jsonl_is_stored_whole_or_refused_naming_a_line_postgres(
    pg_url: str, tmp_path: Path
) -> None:
    _fuzz(pg_url, tmp_path, 15)


def _fuzz(db: str, tmp_path: Path, examples: int) -> None:
    path = tmp_path / "fuzz.jsonl"
    subjects = ["user-7", "user-8", "team-1"]

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(lines=_jsonl(subjects), crlf=st.booleans())
    def add_one_file(lines: list[str], crlf: bool) -> None:
        path.write_bytes(("\r\n" if crlf else "\n").join(lines).encode("utf-8", "surrogatepass"))
        before = dump(db)
        with _captured_stderr() as err:
            code, out = _add(db, path)
        message = err.getvalue()
        assert "Traceback" not in message
        if code == 0:
            assert json.loads(out)["appended"] >= 0 and message == ""
            return
        assert code == 2, message
        assert message.startswith("memlineage: line ") and message.count("\n") == 1, message
        assert dump(db) == before

    add_one_file()


class _captured_stderr:
    """stderr of an in-process command, without pytest's capture fixtures (hypothesis reruns)."""

    def __enter__(self) -> io.StringIO:
        import sys

        self.saved = sys.stderr
        sys.stderr = self.buffer = io.StringIO()
        return self.buffer

    def __exit__(self, *exc: object) -> None:
        import sys

        sys.stderr = self.saved
