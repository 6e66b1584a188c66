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


def test_a_conflict_between_tail_events_extends_the_last_build() -> None:
    """The older events read as before: neither side is one of them."""
    kept = Conflict(id="c-1", a="e1", b="e7")
    generate(request(BASE, conflicts=(kept,)))
    among_tail = Conflict(id="c-2", a="e9", b="e10")
    scope = request(BASE + TAIL, conflicts=(kept, among_tail))
    output, extended = generate(scope)
    assert extended
    assert output == whole(scope)
    assert output["unresolvedConflicts"] == ["c-1", "c-2"]
    contested = {s["derivedFrom"][0]: s["contested"] for s in output["statements"]}  # type: ignore[attr-defined]
    assert (contested["e9"], contested["e10"], contested["e1"]) == ("c-2", "c-2", "c-1")


def test_a_conflict_of_a_tail_event_with_an_older_one_builds_whole() -> None:
    generate(request(BASE))
    scope = request(BASE + TAIL, conflicts=(Conflict(id="c-1", a="e3", b="e10"),))
    output, extended = generate(scope)
    assert not extended
    assert output == whole(scope)


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


SHARED = Conflict(id="c-1", a="e2", b="e3")


def saying_the_conflicts_claim(events: tuple[Event, ...], by: tuple[str, ...]) -> GenerationRequest:
    """Hand-made items: each event of ``by`` also says what the conflict's item says."""
    items: list[Item] = []
    for part in (events[:8], events[8:]):  # the base's events, then the tail's
        items += extract_items(part)
        items += [Item(f"itm-{e.id}", e.id, "fact", "conflict/c-1", "c-1") for e in part
                  if e.id in by]  # fmt: skip
    items.append(conflict_item(SHARED))
    return replace(request(events, conflicts=(SHARED,)), items=tuple(items))


def shared_claims(by: tuple[str, ...]) -> list[list[str]]:
    """The sources of the claims keyed like the conflict's after a run on the base: the
    run extends the base's build and says what a whole build says."""
    generate(saying_the_conflicts_claim(BASE, by))
    scope = saying_the_conflicts_claim(BASE + TAIL, by)
    output, extended = generate(scope)
    assert extended
    assert output == whole(scope)
    return [c["derivedFrom"] for c in output["claims"] if c["key"] == "conflict/c-1"]  # type: ignore[attr-defined]


def test_a_conflict_claim_shared_with_events_keeps_the_order_of_a_whole_build() -> None:
    """Hand-made items may say what a conflict's item says: the run adds the conflict's
    sources after every event's, and the next run's new source goes before them."""
    assert shared_claims(by=("e1", "e9")) == [["e1", "e9", "e2", "e3"]]


def test_an_event_saying_what_a_conflicts_claim_says_later_keeps_one_claim() -> None:
    """A conflict's claim of its own, which a later event's item says too, becomes that
    event's claim grown by the conflict's sources, as in a whole build."""
    assert shared_claims(by=("e9",)) == [["e9", "e2", "e3"]]


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
    contested=st.sampled_from(("never", "always", "later", "in the tail")),
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
    start = 0
    among_tails: tuple[Conflict, ...] = ()  # one more among each run's new events
    for step, end in enumerate(ends):
        selection = events[:end]
        last = step == len(ends) - 1
        contest = contested == "always" or (contested == "later" and last)
        conflicts: tuple[Conflict, ...] = (conflict,) if contest and end >= 2 else ()
        if contested == "in the tail":
            if end - start >= 2:
                among = Conflict(id=f"c-{step + 2}", a=events[start].id, b=events[end - 1].id)
                among_tails += (among,)
            conflicts = among_tails
        open_items = expected_open_items(selection)
        if closed and last:
            open_items = open_items[1:]  # the oldest open task closed by the last run
        scope = request(selection, conflicts=conflicts, open_items=open_items, budget=budget)
        output, extended = generate(scope)
        assert output == whole(scope)
        if before is not None:
            old_conflicts, old_ids, old_open = before
            added = set(conflicts) - set(old_conflicts)
            same = (
                set(old_conflicts) <= set(conflicts)
                and not any({c.a, c.b} & old_ids for c in added)
                and old_ids.intersection(open_items) == old_open
            )
            assert extended == same
        ids = {e.id for e in selection}
        before = conflicts, ids, ids.intersection(open_items)
        start = end


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
