"""The rendered summary: layout, and properties over random streams.

Every line a reader sees is a header or one statement, verbatim; every valid
event is cited or cold; the same statements always render the same text; and
incremental runs over any regrouping of a stream keep the must-preserve and
conflict sets of a full rebuild.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlineage.consolidation import render
from memlineage.consolidation.gate import check
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.parse import parse_output
from memlineage.consolidation.render import (
    CONTESTED_HEADER,
    exceeds_budget,
    render_lines,
    render_summary,
)
from memlineage.meaning.extract import expected_open_items, extract_items
from memlineage.meaning.values import canonical
from memlineage.model import Conflict, Event, Output, Statement
from memlineage.tokens import default_tokenizer
from test_deterministic_generator import SETTINGS, batches, events_

PROPERTIES = settings(SETTINGS, max_examples=75)


def st_(text: str, at: str | None = None, **kw: Any) -> Statement:
    return Statement(text, kw.pop("derived_from", ("e",)), at=at, **kw)


def test_layout_groups_by_project_then_kind_newest_first() -> None:
    statements = [
        st_("I love opera.", "2025-05-01T09:00:00Z", kind="preference"),
        st_("Never deploy on Fridays.", "2026-01-01T09:00:00Z", kind="constraint"),
        st_("I hate opera now.", "2026-01-09T09:00:00Z", kind="preference"),
        st_("Use tabs.", "2026-01-02T09:00:00Z", kind="preference", project="orion"),
        st_("We went hiking.", None, kind=None),
        st_("My office is in Madrid.", "2026-01-10T09:00:00+02:00", contested="c-1"),
        st_("My office is in Seville.", "2026-02-01T09:00:00Z", contested="c-1", project="hq"),
    ]
    assert render_summary(statements).splitlines() == [
        CONTESTED_HEADER,
        "- [c-1] [hq] My office is in Seville. (2026-02-01)",
        "- [c-1] My office is in Madrid. (2026-01-10)",
        "Constraints:",
        "2026-01-01:",
        "- Never deploy on Fridays.",
        "Preferences:",
        "2026-01-09:",
        "- I hate opera now.",
        "2025-05-01:",
        "- I love opera.",
        "Other:",
        "undated:",
        "- We went hiking.",
        "[orion] Preferences:",
        "2026-01-02:",
        "- Use tabs.",
    ]


def test_one_day_line_for_the_statements_of_a_day() -> None:
    statements = [
        st_("I'm vegan.", "2026-01-05T09:00:00Z", kind="fact"),
        st_("I walk about 8,000 steps a day.", "2026-01-05T09:00:00Z", kind="fact"),
        st_("I moved to Lyon.", "2026-01-05T21:00:00Z", kind="fact"),
        st_("I ran 5 km.", None, kind="fact"),
    ]
    assert render_summary(statements).splitlines() == [
        "Facts:",
        "2026-01-05:",
        "- I moved to Lyon.",
        "- I'm vegan.",
        "- I walk about 8,000 steps a day.",
        "undated:",
        "- I ran 5 km.",
    ]


def test_the_date_shown_is_the_local_day_of_at() -> None:
    late = st_("Call me tomorrow.", "2026-01-07T23:00:00-07:00", kind="task")
    assert render_summary([late]).splitlines()[1] == "2026-01-07:"
    contested = replace(late, contested="c-1")
    assert render_summary([contested]).splitlines()[1] == "- [c-1] Call me tomorrow. (2026-01-07)"


def test_no_statements_render_nothing() -> None:
    assert render_summary([]) == ""


# ---------------------------------------------------------------------------
# properties over random streams

_STATEMENT_LINE = re.compile(r"^- (?:\[[^\]]+\] ){0,2}(?P<text>.*?)(?: \((?P<date>[^()]*)\))?$")


def generated(
    events: tuple[Event, ...], conflicts: tuple[Conflict, ...], budget: int | None = None
) -> Output:
    items = extract_items(events, conflicts)
    request = GenerationRequest(
        "u", events, tuple(items), conflicts, expected_open_items(events), budget=budget
    )
    return parse_output(DeterministicGenerator().generate(request))


@PROPERTIES
@given(batches(), st.one_of(st.none(), st.integers(1, 120)))
def test_every_valid_event_is_cited_or_cold(
    batch: tuple[tuple[Event, ...], tuple[Conflict, ...]], budget: int | None
) -> None:
    events, conflicts = batch
    output = generated(events, conflicts, budget)
    cited = {s for x in (*output.statements, *output.claims) for s in x.derived_from}
    for event in events:
        assert event.id in cited or event.id in output.cold, event


@PROPERTIES
@given(batches(), st.one_of(st.none(), st.integers(1, 120)))
def test_every_rendered_line_traces_to_a_statement(
    batch: tuple[tuple[Event, ...], tuple[Conflict, ...]], budget: int | None
) -> None:
    events, conflicts = batch
    output = generated(events, conflicts, budget)
    texts = [s.text for s in output.statements]
    shown: list[str] = []
    for line in render_summary(output.statements).splitlines():
        if not line.startswith("- "):
            assert line == CONTESTED_HEADER or line.endswith(":"), line  # a header
            continue
        match = _STATEMENT_LINE.match(line)
        assert match is not None, line
        shown.append(match["text"])
    assert sorted(shown) == sorted(texts)  # each statement once, verbatim, nothing else
    # and each statement's text is a sentence of one of its source events, verbatim
    by_id = {e.id: " ".join(e.text.split()) for e in events}
    for statement in output.statements:
        assert any(statement.text in by_id[s] for s in statement.derived_from), statement


@PROPERTIES
@given(batches())
def test_rendering_is_deterministic(batch: tuple[tuple[Event, ...], tuple[Conflict, ...]]) -> None:
    events, conflicts = batch
    output = generated(events, conflicts)
    again = parse_output(output.to_json())
    assert render_summary(output.statements) == render_summary(again.statements)
    lines = render_lines(output.statements)
    assert "\n".join(line.text for line in lines) == render_summary(output.statements)
    assert sorted(x.statement for x in lines if x.statement is not None) == list(
        range(len(output.statements))
    )


def _must_preserve(output: Output) -> tuple[set[Any], set[str]]:
    claims = {
        (c.key, canonical(c.value, c.unit), c.polarity, c.kind, frozenset(c.derived_from))
        for c in output.claims
    }
    return claims, set(output.unresolved_conflicts)


@PROPERTIES
@given(
    batches(),
    st.lists(st.integers(1, 6), min_size=1, max_size=6),
    st.one_of(st.none(), st.integers(1, 120)),
    st.booleans(),
)
def test_incremental_runs_of_any_size_keep_the_must_preserve_and_conflict_sets(
    batch: tuple[tuple[Event, ...], tuple[Conflict, ...]],
    sizes: list[int],
    budget: int | None,
    retry: bool,
) -> None:
    raw_events, conflicts = batch
    events = tuple(
        Event(**{**e.__dict__, "seq": n + 1}) for n, e in enumerate(raw_events)
    )  # a stream in seq order
    full = generated(events, conflicts, budget)
    parent: Output | None = None
    covered = 0
    cuts = [0]
    for size in sizes:
        cuts.append(min(len(events), cuts[-1] + size))
    cuts.append(len(events))
    for upto in cuts[1:]:
        for _ in range(1 + retry):  # a retry over the same parent changes nothing
            selection = events[:upto]
            ids = {e.id for e in selection}
            active = tuple(c for c in conflicts if c.a in ids and c.b in ids)
            items = extract_items(selection, active)
            open_items = expected_open_items(selection)
            request = GenerationRequest(
                "u", selection, tuple(items), active, open_items, parent, budget, covered
            )
            output = parse_output(DeterministicGenerator().generate(request))
            report = check(items, active, open_items, output, selection)
            assert report.passed, report.failures
        parent, covered = output, upto
    assert parent is not None
    assert _must_preserve(parent) == _must_preserve(full)


def _restricted(output: Output, own: set[str]) -> tuple[set[Any], set[str]]:
    claims = {
        (c.key, canonical(c.value, c.unit), c.polarity, frozenset(set(c.derived_from) & own))
        for c in output.claims
        if set(c.derived_from) & own
    }
    return claims, set(output.unresolved_conflicts)


@PROPERTIES
@given(batches(), events_(prefix="z", size=4), st.randoms(use_true_random=False))
def test_unrelated_events_leave_the_must_preserve_and_conflict_sets_alone(
    batch: tuple[tuple[Event, ...], tuple[Conflict, ...]],
    unrelated: tuple[Event, ...],
    random: Any,
) -> None:
    events, conflicts = batch
    own = {e.id for e in events}
    alone = generated(events, conflicts)
    mixed = list(events + unrelated)
    random.shuffle(mixed)
    together = generated(tuple(mixed), conflicts)
    assert _restricted(together, own) == _restricted(alone, own)


def test_a_line_shows_its_speaker_once() -> None:
    said = Statement("I moved to Lisbon.", ("t-1",), speaker="Caroline", kind="fact")
    prefixed = Statement("Melanie: I paint.", ("t-2",), speaker="Melanie", kind="fact")
    lines = render_summary([said, prefixed]).splitlines()
    assert "- Caroline: I moved to Lisbon." in lines
    assert "- Melanie: I paint." in lines  # the text already names its speaker


def test_a_part_of_a_long_event_is_shown_with_its_mark() -> None:
    part = Statement("The first hundred words.", ("m-12",), kind="fact", part=(2, 5))
    assert "- The first hundred words. (part 2/5 of m-12)" in render_summary([part]).splitlines()


def test_a_summary_over_budget_says_so_in_its_text() -> None:
    text = render_summary(
        [Statement("Never deploy on Fridays.", ("m-1",))], budget=5, over_budget=True
    )
    assert text.splitlines()[-1].startswith("(over the budget of 5 tokens")


def test_a_long_text_is_counted_as_often_as_asked_and_the_same() -> None:
    """The tokenizer keeps the last long text's count: the same text counts the same,
    another text gets its own count."""
    from memlineage.tokens import CACHED_TEXT, TiktokenTokenizer

    tokenizer = TiktokenTokenizer()
    long_text = "word " * CACHED_TEXT
    other = "two words " * CACHED_TEXT
    expected = tokenizer.count_uncached(long_text)
    assert tokenizer.count(long_text) == expected
    assert tokenizer.count("".join(["word "] * CACHED_TEXT)) == expected  # equal, not the same
    assert tokenizer.count(other) == tokenizer.count_uncached(other) != expected
    assert tokenizer.count(long_text) == expected


def test_the_last_summary_rendered_is_reused_only_for_equal_statements() -> None:
    """Equal statements (not the same objects) render the remembered text; any change
    in a field a reader sees renders anew."""
    statements = [st_("I love tea.", "2024-05-01T10:00:00Z", kind="preference")]
    first = render_summary(statements)
    assert render_summary([replace(statements[0])]) == first
    moved = render_summary([replace(statements[0], at="2024-06-01T10:00:00Z")])
    assert moved != first and "2024-06-01" in moved
    assert render_summary(statements, budget=10, over_budget=True).startswith(first + "\n")
    assert render_summary(statements) == first


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.sampled_from(["", " ", "ok", "The fee is 40 EUR."]), max_size=200),
    budget=st.integers(0, 3),
)
def test_a_budget_decided_without_rendering_says_what_the_count_says(
    texts: list[str], budget: int
) -> None:
    """The fewest characters a line can have (``- `` and a newline) decide a summary
    of many lines over a small budget; every other one is rendered and counted."""
    statements = [Statement(text=t, derived_from=(f"e{n}",)) for n, t in enumerate(texts)]
    rendered = render_summary(statements)
    assert exceeds_budget(statements, budget, default_tokenizer()) == (
        default_tokenizer().count(rendered) > budget
    )


def test_a_summary_of_more_lines_than_its_budget_holds_is_not_rendered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    statements = [
        Statement(text=f"Rack {n} is full.", derived_from=(f"e{n}",)) for n in range(9_000)
    ]
    rendered: list[int] = []

    def counted(lines: Any) -> list[render.Line]:
        rendered.append(1)
        return []

    monkeypatch.setattr(render, "render_lines", counted)
    assert exceeds_budget(statements, 50, default_tokenizer())
    assert rendered == []
