"""Selection judges a tail alone while the operations are the same, and says what a
whole selection says (consolidation/select.py).

A worker's read keeps the subject's operations as one object while no operation is
recorded; a selection over the same events plus a tail then judges only the tail.
Any other operations (a new tuple, even an equal one) judge every event again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlineage.canonical import input_root
from memlineage.consolidation import select as selecting
from memlineage.consolidation.select import Selection, carries_over, root_of, select
from memlineage.model import Alias, Event, Manifest, Operation, OpKind
from memlineage.raw.validity import DEFAULT_POLICY, TrustPolicy, source_state


def event(seq: int, taint: tuple[str, ...] = (), trust: str = "user") -> Event:
    return Event(id=f"e{seq}", subject="u", text=f"Event {seq}.", seq=seq, hash=f"h{seq}",
                 taint=taint, trust=trust)  # fmt: skip


def whole(
    events: list[Event], ops: tuple[Operation, ...], high_water: int, policy: TrustPolicy
) -> Selection:
    """What the raw layer's fold says, judged over every event at once."""
    candidates = [e for e in events if e.seq <= high_water]
    state = source_state(candidates, ops, policy)
    chosen = tuple(sorted((e for e in candidates if state.is_valid(e)), key=lambda e: e.seq))
    ids = {e.id for e in chosen}
    conflicts = tuple(c for c in state.unresolved if c.a in ids and c.b in ids)
    return Selection(chosen, conflicts, high_water)


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    selecting.forget_selections()
    yield
    selecting.forget_selections()


def test_a_tail_under_the_same_operations_is_judged_alone() -> None:
    events = [event(n) for n in range(1, 6)]
    ops = (Operation(op_seq=1, kind=OpKind.REVOKE, target="e2"),)
    select(events[:3], ops, 3)
    kept = selecting._last.get("u")
    tainted = [*events, event(6, taint=("scraped",))]
    chosen = select(tainted, ops, 6)
    assert selecting._last.get("u") is kept  # extended, not judged whole
    assert [e.id for e in chosen.events] == ["e1", "e3", "e4", "e5"]


def test_new_operations_of_the_tail_alone_judge_the_tail_alone() -> None:
    """A conflict among new events, resolved, and a revocation of one: the older events
    read as before."""
    events = [event(n) for n in range(1, 8)]
    ops = (Operation(op_seq=1, kind=OpKind.REVOKE, target="e2"),)
    select(events[:3], ops, 3)
    kept = selecting._last.get("u")
    grown = (
        *ops,
        Operation(op_seq=2, kind=OpKind.CONFLICT, target="e4", other="e5", conflict_id="c-1"),
        Operation(op_seq=3, kind=OpKind.CONFLICT, target="e5", other="e6", conflict_id="c-2"),
        Operation(op_seq=4, kind=OpKind.RESOLVE, target="e5", other="e6", conflict_id="c-2"),
        Operation(op_seq=5, kind=OpKind.REVOKE, target="e7"),
    )
    chosen = select(events, grown, 7)
    assert selecting._last.get("u") is kept  # extended, not judged whole
    assert chosen == whole(events, grown, 7, DEFAULT_POLICY)
    assert [e.id for e in chosen.events] == ["e1", "e3", "e4", "e6"]
    assert [c.id for c in chosen.conflicts] == []  # c-1 lost its side e5: not among them


def test_a_new_operation_naming_an_older_event_judges_every_event_again() -> None:
    events = [event(n) for n in range(1, 6)]
    select(events[:3], (), 3)
    kept = selecting._last.get("u")
    ops = (Operation(op_seq=1, kind=OpKind.CONFLICT, target="e1", other="e4", conflict_id="c-1"),)
    chosen = select(events, ops, 5)
    assert selecting._last.get("u") is not kept
    assert [c.id for c in chosen.conflicts] == ["c-1"]


def test_new_operations_judge_every_event_again() -> None:
    events = [event(n) for n in range(1, 4)]
    select(events, (), 3)
    ops = (Operation(op_seq=1, kind=OpKind.REVOKE, target="e1"),)
    assert [e.id for e in select(events, ops, 3).events] == ["e2", "e3"]


KINDS = (OpKind.REVOKE, OpKind.CONFLICT, OpKind.RESOLVE, OpKind.DISMISS, OpKind.TRUST,
         OpKind.POLICY)  # fmt: skip


@st.composite
def operations(draw: st.DrawFn, count: int) -> tuple[Operation, ...]:
    ops = []
    for n in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(KINDS))
        a, b = (f"e{draw(st.integers(1, count))}" for _ in range(2))
        ops.append(Operation(
            op_seq=n + 1, kind=kind, target=a, other=b, conflict_id="c-1",
            trust=draw(st.sampled_from((None, "user", "scraped-web"))),
            taint=draw(st.sampled_from((None, (), ("scraped",)))),
        ))  # fmt: skip
    return tuple(ops)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), count=st.integers(2, 12), cuts=st.lists(st.integers(1, 12), max_size=3))
def test_growing_selections_say_what_a_whole_selection_says(
    data: st.DataObject, count: int, cuts: list[int]
) -> None:
    selecting.forget_selections()
    events = [
        event(n, data.draw(st.sampled_from(((), ("scraped",)))),
              data.draw(st.sampled_from(("user", "tool", "nobody"))))
        for n in range(1, count + 1)
    ]  # fmt: skip
    every_op = data.draw(operations(count))
    policy = data.draw(st.sampled_from((DEFAULT_POLICY, TrustPolicy(frozenset({"x"})))))
    recorded = 0  # operations are recorded as events arrive: each run reads a longer prefix
    ops = every_op[:0]
    for end in sorted({min(c, count) for c in cuts} | {count}):
        high_water = data.draw(st.integers(end - 1, end))
        more = data.draw(st.integers(recorded, len(every_op)))
        if more != recorded:  # else the very same operations, as a worker's read keeps them
            recorded, ops = more, every_op[:more]
        got = select(events[:end], ops, high_water, policy)
        assert got == whole(events[:end], ops, high_water, policy)
        assert got.ids == tuple(e.id for e in got.events)
        assert got.new_events == tuple(e for e in got.events if e.seq > 0)


def test_a_conflict_completed_by_a_later_event_is_among_the_conflicts() -> None:
    """Under the very same operations, an event chosen later (past the last high water)
    completes a conflict the fold already holds: the last run's conflicts are not kept."""
    events = [event(n) for n in range(1, 6)]
    ops = (
        Operation(op_seq=1, kind=OpKind.CONFLICT, target="e1", other="e2", conflict_id="c-0"),
        Operation(op_seq=2, kind=OpKind.CONFLICT, target="e2", other="e5", conflict_id="c-1"),
    )
    first = select(events, ops, 4)
    assert [c.id for c in first.conflicts] == ["c-0"]
    assert select(events, ops, 4).conflicts is first.conflicts  # nothing new: the same
    later = select(events, ops, 5)
    assert [c.id for c in later.conflicts] == ["c-0", "c-1"]
    assert later == whole(events, ops, 5, DEFAULT_POLICY)


def test_a_tail_older_than_the_events_before_it_is_placed_in_seq_order() -> None:
    first, fifth, third = event(1), event(5), event(3)
    select([first, fifth], (), 9)
    assert [e.id for e in select([first, fifth, third], (), 9).events] == ["e1", "e3", "e5"]


def test_an_older_event_that_is_not_the_same_is_judged_again() -> None:
    select([event(1), event(2)], (), 9)
    changed = [event(1, taint=("scraped",)), event(2), event(3)]
    assert [e.id for e in select(changed, (), 9).events] == ["e2", "e3"]


def manifest_of(selection: Selection, covers: int, conflicts: tuple[str, ...] = ()) -> Manifest:
    """A parent built on ``selection`` (its root noted as consolidation notes it)."""
    return Manifest(
        artifact_id="a-1", subject="u", new_covers_through=covers, input_epoch=0,
        expected_alias=Alias(), input_ids=tuple(e.id for e in selection.events),
        input_root=root_of(selection), expected_conflicts=conflicts, selector_version="v2",
        prompt_version="p", model_snapshot="m",
    )  # fmt: skip


def slow_carries_over(selection: Selection, parent: Manifest) -> bool:
    """``carries_over`` comparing every event, as a selection made elsewhere is."""
    return carries_over(replace(selection, source=None), parent)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), count=st.integers(2, 12), cut=st.integers(1, 11))
def test_a_noted_root_carries_over_as_the_events_compared_one_by_one(
    data: st.DataObject, count: int, cut: int
) -> None:
    """A parent whose root this process noted, then operations on the new events alone,
    on older ones, or none: the shortcut says what comparing every event says."""
    selecting.forget_selections()
    events = [event(n) for n in range(1, count + 1)]
    cut = min(cut, count - 1)
    ops = data.draw(operations(count))
    first_ops = ops[: data.draw(st.integers(0, len(ops)))]
    before = select(events[:cut], first_ops, cut)
    touching = tuple(c.id for c in before.conflicts)
    parent = manifest_of(before, cut, touching)
    after = select(events, ops, count)
    assert carries_over(after, parent) == slow_carries_over(after, parent)


@settings(max_examples=200, deadline=None)
@given(cuts=st.lists(st.integers(1, 14), min_size=1, max_size=5), late=st.booleans())
def test_each_root_of_a_growing_selection_is_the_root_of_its_events(
    cuts: list[int], late: bool
) -> None:
    """Roots hashed on from the last one noted (ids e1..e14 do not sort in seq order, so
    some runs hash the whole list), and one asked again of an earlier selection."""
    selecting.forget_selections()
    events = [event(n) for n in range(1, 15)]
    selections = [select(events[:cut], (), cut) for cut in sorted(cuts)]
    for selection in selections[:-1] if late else selections:
        assert root_of(selection) == input_root((e.id, e.hash) for e in selection.events)
    if late:  # the last first, then the earlier ones: none may be hashed on past its end
        for selection in [selections[-1], *selections[:-1]]:
            assert root_of(selection) == input_root((e.id, e.hash) for e in selection.events)


def test_a_conflict_among_new_events_carries_the_parent_over() -> None:
    events = [event(n) for n in range(1, 6)]
    parent = manifest_of(select(events[:3], (), 3), 3)
    ops = (Operation(op_seq=1, kind=OpKind.CONFLICT, target="e4", other="e5", conflict_id="c"),)
    grown = select(events, ops, 5)
    assert [c.id for c in grown.conflicts] == ["c"]
    assert carries_over(grown, parent) and slow_carries_over(grown, parent)
    older = (Operation(op_seq=1, kind=OpKind.CONFLICT, target="e1", other="e5", conflict_id="c"),)
    selecting.forget_selections()
    parent = manifest_of(select(events[:3], (), 3), 3)
    assert not carries_over(select(events, older, 5), parent)


def test_a_conflict_dropped_and_another_recorded_is_read_from_the_new_fold() -> None:
    """New operations that drop a resolved conflict of events not yet selected and record
    another between them: the fold is not the last one continued, so its conflicts are
    read again, not taken as the last run's plus what comes after them."""
    events = [event(n) for n in range(1, 7)]
    ops = (
        Operation(op_seq=1, kind=OpKind.CONFLICT, target="e1", other="e2", conflict_id="c-0"),
        Operation(op_seq=2, kind=OpKind.CONFLICT, target="e5", other="e6", conflict_id="c-1"),
        Operation(op_seq=3, kind=OpKind.RESOLVE, target="e5", other="e5", conflict_id="c-1"),
    )
    select(events, ops, 4)
    more = (
        *ops,
        Operation(op_seq=4, kind=OpKind.DISMISS, target="e5", conflict_id="c-1"),
        Operation(op_seq=5, kind=OpKind.CONFLICT, target="e5", other="e6", conflict_id="c-2"),
    )
    later = select(events, more, 6)
    assert [c.id for c in later.conflicts] == ["c-0", "c-2"]
    assert later == whole(events, more, 6, DEFAULT_POLICY)
