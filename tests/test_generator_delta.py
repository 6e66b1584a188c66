"""The built-in generator extends its last build by a tail, and says what a whole build says.

A worker consolidates a subject again and again, each time over the same events
plus a few new ones. The generator keeps what its last build of the subject
left (claim drafts, groups of identical events, their units) and adds the tail
to it; whenever the older events could read differently (another conflict, an
open mark moved, an event that is not the same), it builds whole. Either way
the output must be the one a fresh process would make.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlineage.consolidation.generators import deterministic
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.parse import parse_output
from memlineage.meaning.extract import conflict_item, expected_open_items, extract_items
from memlineage.model import Claim, Conflict, Event, Item
from memlineage.store.rows import dumps, serialised_output
from test_gate_delta import POOL, request

AT = "2024-03-01T10:00:00Z"
# the gate's test texts once each (its base says the launch date twice), a greeting
# and an event without text
TEXTS = (*dict.fromkeys(POOL), "Hi!", "")
SPEAKERS = (None, "Alice", "Bob")
PROJECTS = (None, "orion")
KINDS = (None, "fact", "task")


def event(seq: int, text: str, speaker: str | None = None, project: str | None = None,
          kind: str | None = None) -> Event:  # fmt: skip
    return Event(
        id=f"e{seq}", subject="u", text=text, at=AT, seq=seq, hash=f"h{seq}",
        speaker=speaker, project=project, kind=kind,
    )  # fmt: skip


def whole(scope: GenerationRequest) -> dict[str, object]:
    """What a process that never built the subject makes of ``scope`` (this one's
    builds are put back after). Its typed output, which consolidation gates without
    the JSON round trip, is what parsing the JSON gives."""
    kept = deterministic._builds.take(scope.subject)
    output = DeterministicGenerator().generate(scope)
    deterministic.forget_builds()
    assert DeterministicGenerator().output(scope) == parse_output(output)
    deterministic.forget_builds()
    if kept is not None:
        deterministic._builds.keep(scope.subject, kept)
    return output


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    deterministic.forget_builds()
    yield
    deterministic.forget_builds()


def generate(scope: GenerationRequest) -> tuple[dict[str, object], bool]:
    """The output, and whether it extended the subject's last build (not built whole)."""
    before = deterministic._builds.get(scope.subject)
    output = DeterministicGenerator().generate(scope)
    return output, before is not None and deterministic._builds.get(scope.subject) is before


BASE = tuple(event(n + 1, text) for n, text in enumerate(TEXTS[:8]))
TAIL = (
    event(9, "The budget is $500."),  # said again: its claim grows a source, its group a member
    event(10, "The venue holds 120 people."),
    event(11, "Hi!"),
)


def test_a_tail_extends_the_last_build() -> None:
    generate(request(BASE, budget=400))
    scope = request(BASE + TAIL, budget=400)
    output, extended = generate(scope)
    assert extended
    assert output == whole(scope)
    budget = next(s for s in output["statements"] if s["text"] == "The budget is $500.")  # type: ignore[attr-defined]
    assert budget["derivedFrom"] == ["e2", "e9"]


def test_the_same_ids_and_hashes_with_other_words_build_whole() -> None:
    """An event's hash is only as good as whoever made the event: every field is compared."""
    generate(request(BASE))
    edited = (event(1, "Always deploy on Fridays."), *BASE[1:])
    scope = request(edited + TAIL)
    output, extended = generate(scope)
    assert not extended
    assert output == whole(scope)
    assert "Always deploy on Fridays." in [s["text"] for s in output["statements"]]  # type: ignore[attr-defined]


def test_a_new_conflict_builds_whole() -> None:
    generate(request(BASE))
    conflict = Conflict(id="c-1", a="e1", b="e7")
    scope = request(BASE + TAIL, conflicts=(conflict,))
    output, extended = generate(scope)
    assert not extended
    assert output == whole(scope)
    contested = [s for s in output["statements"] if s["contested"] == "c-1"]  # type: ignore[attr-defined]
    assert sorted(s["derivedFrom"][0] for s in contested) == ["e1", "e7"]


def test_the_conflicts_claims_follow_the_requests_order() -> None:
    first, second = Conflict(id="c-1", a="e1", b="e7"), Conflict(id="c-2", a="e2", b="e5")
    generate(request(BASE, conflicts=(first, second)))
    scope = request(BASE + TAIL, conflicts=(second, first))
    output, extended = generate(scope)
    assert extended  # the same conflicts, listed the other way round
    assert output == whole(scope)
    keys = [c["key"] for c in output["claims"] if c["key"].startswith("conflict/")]  # type: ignore[attr-defined]
    assert keys == ["conflict/c-2", "conflict/c-1"]


def test_an_old_task_closed_builds_whole() -> None:
    generate(request(BASE))
    scope = request(BASE + TAIL, open_items=())  # the venue was booked since
    output, extended = generate(scope)
    assert not extended
    assert output == whole(scope)
    assert output["openItems"] == []


def test_a_new_item_of_an_old_event_builds_whole() -> None:
    """Requests made by hand need not have extraction's shape: an item of an old event
    among the new ones changes that event's line."""
    generate(request(BASE))
    scope = request(BASE + TAIL)
    late = Item("itm-late", "e1", "fact", "global/fact/rollout", "weekly", None, True, "")
    scope = replace(scope, items=(*scope.items, late))
    output, extended = generate(scope)
    assert not extended
    assert output == whole(scope)
    line = next(s for s in output["statements"] if s["derivedFrom"] == ["e1"])  # type: ignore[attr-defined]
    assert "global/fact/rollout" in line["claims"]


def test_a_conflict_claim_shared_with_events_keeps_the_order_of_a_whole_build() -> None:
    """Hand-made items may say what a conflict's item says: the run adds the conflict's
    sources after every event's, and the next run's new source goes before them."""
    conflict = Conflict(id="c-1", a="e2", b="e3")

    def scope_of(events: tuple[Event, ...]) -> GenerationRequest:
        items: list[Item] = []
        for part, said_by in ((events[:8], "e1"), (events[8:], "e9")):
            items += extract_items(part)
            if part:
                items.append(Item(f"itm-{said_by}", said_by, "fact", "conflict/c-1", "c-1"))
        items.append(conflict_item(conflict))
        return replace(request(events, conflicts=(conflict,)), items=tuple(items))

    generate(scope_of(BASE))
    scope = scope_of(BASE + TAIL)
    output, extended = generate(scope)
    assert extended
    assert output == whole(scope)
    claim = next(c for c in output["claims"] if c["key"] == "conflict/c-1")  # type: ignore[attr-defined]
    assert claim["derivedFrom"] == ["e1", "e9", "e2", "e3"]


def test_another_subject_keeps_its_own_build() -> None:
    generate(request(BASE))
    other = GenerationRequest("v", BASE[:2], tuple(extract_items(BASE[:2])), (), ())
    DeterministicGenerator().generate(other)
    _, extended = generate(request(BASE + TAIL))
    assert extended


def test_erasure_forgets_the_builds() -> None:
    from memlineage.meaning import caches

    generate(request(BASE))
    caches.clear_all()
    _, extended = generate(request(BASE + TAIL))
    assert not extended


@st.composite
def subjects(draw: st.DrawFn) -> tuple[Event, ...]:
    count = draw(st.integers(min_value=2, max_value=16))
    return tuple(
        event(
            n + 1,
            draw(st.sampled_from(TEXTS)),
            draw(st.sampled_from(SPEAKERS)),
            draw(st.sampled_from(PROJECTS)),
            draw(st.sampled_from(KINDS)),
        )
        for n in range(count)
    )


@settings(max_examples=300, deadline=None)
@given(
    events=subjects(),
    cuts=st.lists(st.integers(min_value=1, max_value=15), min_size=1, max_size=3),
    contested=st.sampled_from(("never", "always", "later")),
    closed=st.booleans(),
    budget=st.one_of(st.none(), st.integers(min_value=1, max_value=200)),
)
def test_runs_over_growing_selections_say_what_a_whole_build_says(
    events: tuple[Event, ...], cuts: list[int], contested: str, closed: bool, budget: int | None
) -> None:
    """Each run over a longer prefix: the output equals a fresh whole build's, and a run
    that changed nothing about the older events extended the last build."""
    deterministic.forget_builds()
    conflict = Conflict(id="c-1", a=events[0].id, b=events[1].id)
    ends = sorted({min(cut, len(events)) for cut in cuts} | {len(events)})
    before: tuple[tuple[Conflict, ...], set[str], set[str]] | None = None
    for step, end in enumerate(ends):
        selection = events[:end]
        contest = contested == "always" or (contested == "later" and step == len(ends) - 1)
        conflicts = (conflict,) if contest and end >= 2 else ()
        open_items = expected_open_items(selection)
        if closed and step == len(ends) - 1:
            open_items = open_items[1:]  # the oldest open task closed by the last run
        scope = request(selection, conflicts=conflicts, open_items=open_items, budget=budget)
        output, extended = generate(scope)
        assert output == whole(scope)
        if before is not None:
            old_conflicts, old_ids, old_open = before
            same = conflicts == old_conflicts and old_ids.intersection(open_items) == old_open
            assert extended == same
        ids = {e.id for e in selection}
        before = conflicts, ids, ids.intersection(open_items)


@settings(max_examples=100, deadline=None)
@given(events=subjects(), cut=st.integers(min_value=1, max_value=15))
def test_an_output_is_stored_as_its_json_says_byte_for_byte(
    events: tuple[Event, ...], cut: int
) -> None:
    """The writer serialises each claim and statement once per process and joins them;
    the stored text must be exactly what serialising the whole output gives."""
    first = DeterministicGenerator().output(request(events[:cut]))
    second = DeterministicGenerator().output(request(events))  # shares most parts
    odd = Claim("global/fact/ünïcode", 0.1 + 0.2, "€", False, "fact", ("e1",), 'say "hi"\n')
    for output in (first, second, replace(second, claims=(*second.claims, odd))):
        assert serialised_output(output) == dumps(output.to_json())
        assert parse_output(serialised_output(output)) == output
