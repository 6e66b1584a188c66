"""The gate on a delta gives the whole gate's verdict (consolidation/gate_delta.py).

A summary built on its published base is judged by reading only what changed;
every output the whole gate rejects must still be rejected, with the whole
gate's report, and what it accepts must still be accepted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlineage import Memory
from memlineage.consolidation import gate, gate_delta
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.meaning.extract import expected_open_items, extract_items
from memlineage.model import Claim, Conflict, Event, GateReport, Output, Statement
from memlineage.recall.prompt import render

AT = "2024-03-01T10:00:00Z"
BASE_TEXTS = (
    "Never deploy on Fridays.",
    "The budget is $500.",
    "TODO: book the venue for the offsite.",
    "We chatted about the weather and lunch.",
    "The launch moved to 2024-05-02.",
    "Alice prefers tea over coffee.",
    "The launch moved to 2024-05-02.",  # said twice: one claim from both events
)
TAIL_TEXTS = (
    "The budget is $500.",  # said again: its claim and statement grow a source
    "Do not use the staging database on Mondays.",
    "The venue holds 80 people.",
    "We talked about the film again.",
)


def event(seq: int, text: str) -> Event:
    return Event(id=f"e{seq}", subject="u", text=text, at=AT, seq=seq, hash=f"h{seq}")


BASE = tuple(event(n + 1, text) for n, text in enumerate(BASE_TEXTS))
TAIL = tuple(event(len(BASE) + n + 1, text) for n, text in enumerate(TAIL_TEXTS))


def request(
    events: tuple[Event, ...],
    parent: Output | None = None,
    conflicts: tuple[Conflict, ...] = (),
    *,
    open_items: tuple[str, ...] | None = None,
    budget: int | None = None,
) -> GenerationRequest:
    """The request a consolidation makes of ``events`` (the open items extraction expects
    unless given)."""
    return GenerationRequest(
        "u",
        events,
        tuple(extract_items(events, conflicts)),
        conflicts,
        expected_open_items(events) if open_items is None else open_items,
        parent,
        budget,
        parent_covers_through=len(BASE) if parent else 0,
    )


def generated(scope: GenerationRequest) -> Output:
    """The built-in generator's output as consolidation gates it: typed, its carried
    claims and statements the very objects of the base's."""
    return DeterministicGenerator().output(scope)


def on_delta(scope: GenerationRequest, output: Output) -> GateReport:
    return gate_delta.check(
        scope.items, scope.conflicts, scope.open_items, output, scope.events, scope.parent
    )


def whole(scope: GenerationRequest, output: Output) -> GateReport:
    return gate.check(list(scope.items), scope.conflicts, scope.open_items, output, scope.events)


@pytest.fixture
def child() -> Iterator[tuple[GenerationRequest, Output]]:
    """A base judged in this process, and its child's request and output."""
    gate_delta.forget_judged()
    base_scope = request(BASE)
    base = generated(base_scope)
    assert on_delta(base_scope, base).passed
    scope = request(BASE + TAIL, base)
    yield scope, generated(scope)
    gate_delta.forget_judged()


def whole_gate_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the runs of the whole gate from now on (it still judges)."""
    runs: list[int] = []
    real = gate.check

    def counted(*args: Any, **kwargs: Any) -> GateReport:
        runs.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(gate, "check", counted)
    return runs


def test_a_child_passes_without_the_whole_gate(
    child: tuple[GenerationRequest, Output], monkeypatch: pytest.MonkeyPatch
) -> None:
    scope, output = child
    expected = whole(scope, output)
    assert expected.passed, expected.failures

    def no_whole_gate(*_: object) -> GateReport:
        raise AssertionError("judged whole")

    monkeypatch.setattr(gate, "check", no_whole_gate)
    assert on_delta(scope, output) == expected


def test_a_base_judged_elsewhere_is_judged_whole(
    child: tuple[GenerationRequest, Output], monkeypatch: pytest.MonkeyPatch
) -> None:
    scope, output = child
    gate_delta.forget_judged()  # as in another process
    runs = whole_gate_runs(monkeypatch)
    assert on_delta(scope, output).passed
    assert runs == [1]


def test_a_child_replaces_its_base(
    child: tuple[GenerationRequest, Output], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One record per subject: the next run builds on the child, not on its base again."""
    scope, output = child
    runs = whole_gate_runs(monkeypatch)
    assert on_delta(scope, output).passed and runs == []
    grandchild = request(BASE + TAIL, output)
    assert on_delta(grandchild, output).passed and runs == []  # the child is now the base
    assert on_delta(scope, output).passed and runs == [1]  # its base is forgotten


def _drop_tail_rule(output: Output) -> Output:
    rule = TAIL[1].id
    kept = tuple(s for s in output.statements if rule not in s.derived_from)
    return replace(output, statements=kept)


def _drop_base_claim(output: Output) -> Output:
    claims = list(output.claims)
    launch = next(c for c in claims if BASE[4].id in c.derived_from)
    claims.remove(launch)
    return replace(output, claims=tuple(claims))


def _narrowed(output: Output, sources: set[str], to: str) -> Output:
    """The claim deriving from exactly ``sources`` derives from ``to`` alone."""
    claims = tuple(
        replace(c, derived_from=(to,)) if set(c.derived_from) == sources else c
        for c in output.claims
    )
    assert claims != output.claims
    return replace(output, claims=claims)


def _narrow_grown_claim(output: Output) -> Output:
    return _narrowed(output, {BASE[1].id, TAIL[0].id}, BASE[1].id)


def _narrow_base_claim(output: Output) -> Output:
    return _narrowed(output, {BASE[4].id, BASE[6].id}, BASE[4].id)


def _reword_carried_number(output: Output) -> Output:
    return replace(
        output,
        statements=tuple(
            replace(s, text=s.text.replace("2024-05-02", "2024-05-09")) for s in output.statements
        ),
    )


def _base_rule_to_cold(output: Output) -> Output:
    rule = BASE[0].id
    kept = tuple(s for s in output.statements if rule not in s.derived_from)
    return replace(output, statements=kept, cold=(*output.cold, rule))


def _tail_claim_changed(output: Output) -> Output:
    def changed(claim: Claim) -> Claim:
        return replace(claim, value=81) if claim.value == 80 else claim

    return replace(output, claims=tuple(changed(c) for c in output.claims))


def _claim_no_event_says(output: Output) -> Output:
    invented = Claim("venue/catering", "free lunch", None, True, "fact", (TAIL[2].id,))
    return replace(output, claims=(*output.claims, invented))


def _open_task_dropped(output: Output) -> Output:
    return replace(output, open_items=tuple(i for i in output.open_items if i != BASE[2].id))


def _events_merged(output: Output) -> Output:
    merged = Statement(
        text=f"{BASE[3].text} {TAIL[3].text}", derived_from=(BASE[3].id, TAIL[3].id), at=AT
    )
    return replace(output, statements=(*output.statements, merged))


def _narrative_made_a_rule(output: Output) -> Output:
    chat = BASE[3].id
    return replace(
        output,
        statements=tuple(
            replace(s, kind="constraint") if s.derived_from == (chat,) else s
            for s in output.statements
        ),
    )


def _tail_event_dropped(output: Output) -> Output:
    film = TAIL[3].id
    kept = tuple(s for s in output.statements if film not in s.derived_from)
    return replace(output, statements=kept, cold=tuple(c for c in output.cold if c != film))


def _cold_outside_the_selection(output: Output) -> Output:
    return replace(output, cold=(*output.cold, "e99"))


def _base_claim_twice(output: Output) -> Output:
    return replace(output, claims=(*output.claims, output.claims[0]))


def _base_claim_again_equal(output: Output) -> Output:
    return replace(output, claims=(*output.claims, replace(output.claims[0])))


def _base_claim_for_another_twice(output: Output) -> Output:
    removed = _drop_base_claim(output)
    return replace(removed, claims=(*removed.claims, removed.claims[0]))


def _base_claim_for_another_again(output: Output) -> Output:
    removed = _drop_base_claim(output)
    return replace(removed, claims=(*removed.claims, replace(removed.claims[0])))


MUTATIONS: dict[str, Callable[[Output], Output]] = {
    "a cold id outside the selection": _cold_outside_the_selection,
    "a base claim removed, another listed twice": _base_claim_for_another_twice,
    "a base claim removed, another listed again": _base_claim_for_another_again,
    "a new binding event left out": _drop_tail_rule,
    "a base claim removed": _drop_base_claim,
    "a grown claim narrowed to its old sources": _narrow_grown_claim,
    "a base claim narrowed": _narrow_base_claim,
    "a carried statement's date changed": _reword_carried_number,
    "a binding event of the base moved to cold": _base_rule_to_cold,
    "a new claim's value changed": _tail_claim_changed,
    "a new claim no event says": _claim_no_event_says,
    "an open task of the base dropped": _open_task_dropped,
    "two events merged into one line": _events_merged,
    "small talk shown as a rule": _narrative_made_a_rule,
    "a new event neither shown nor cold": _tail_event_dropped,
}


@pytest.mark.parametrize("mutation", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_what_the_whole_gate_rejects_the_delta_rejects_alike(
    child: tuple[GenerationRequest, Output], mutation: Callable[[Output], Output]
) -> None:
    scope, output = child
    assert output.to_json() != mutation(output).to_json()  # the mutation changed something
    mutated = mutation(output)
    expected = whole(scope, mutated)
    assert not expected.passed
    assert on_delta(scope, mutated) == expected


@pytest.mark.parametrize("twice", [_base_claim_twice, _base_claim_again_equal])
def test_a_claim_listed_twice_is_judged_by_the_whole_gate(
    child: tuple[GenerationRequest, Output],
    monkeypatch: pytest.MonkeyPatch,
    twice: Callable[[Output], Output],
) -> None:
    """Two claims with one identity leave no claim record to build on: no delta."""
    scope, output = child
    mutated = twice(output)
    expected = whole(scope, mutated)
    runs = whole_gate_runs(monkeypatch)
    assert on_delta(scope, mutated) == expected
    assert runs == [1]


def test_the_base_events_must_be_the_ones_judged(
    child: tuple[GenerationRequest, Output], monkeypatch: pytest.MonkeyPatch
) -> None:
    scope, output = child
    edited = replace(scope.events[1], hash="edited")
    events = (scope.events[0], edited, *scope.events[2:])
    runs = whole_gate_runs(monkeypatch)
    gate_delta.check(scope.items, (), scope.open_items, output, events, scope.parent)
    assert runs == [1]


def test_incremental_runs_are_judged_on_their_delta(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the store: a warm run on a fresh summary never runs the whole gate, and what
    it publishes reads as the full rebuild's summary does."""
    memory.add([{"id": f"b{n}", "subject": "u", "text": t} for n, t in enumerate(BASE_TEXTS)])
    memory.consolidate("u")
    memory.add([{"id": f"t{n}", "subject": "u", "text": t} for n, t in enumerate(TAIL_TEXTS)])
    runs = whole_gate_runs(monkeypatch)
    assert memory.consolidate("u").switched and runs == []
    recalled = memory.recall("u")
    assert recalled.mode == "summary"
    summary = render(recalled, "markdown")
    for text in ("Never deploy on Fridays.", "Do not use the staging database on Mondays."):
        assert text in summary


RIVALS = (event(20, "The deadline is Friday."), event(21, "The deadline is Monday."))
CONFLICT = Conflict(id="c-deadline", a=RIVALS[0].id, b=RIVALS[1].id)


def _contested_without_cause(output: Output) -> Output:
    venue = TAIL[2].id
    return replace(
        output,
        statements=tuple(
            replace(s, contested=CONFLICT.id) if s.derived_from == (venue,) else s
            for s in output.statements
        ),
    )


def _side_shown_uncontested(output: Output) -> Output:
    side = RIVALS[0].id
    return replace(
        output,
        statements=tuple(
            replace(s, contested=None) if side in s.derived_from else s for s in output.statements
        ),
    )


def _conflict_side_asserted(output: Output) -> Output:
    asserted = Claim("deadline", "Friday", None, True, "fact", (RIVALS[0].id, TAIL[2].id))
    return replace(output, claims=(*output.claims, asserted))


def _conflict_not_reported(output: Output) -> Output:
    return replace(output, unresolved_conflicts=())


def _conflict_claim_dropped(output: Output) -> Output:
    return replace(output, claims=tuple(c for c in output.claims if CONFLICT.id not in c.key))


CONFLICT_MUTATIONS: dict[str, Callable[[Output], Output]] = {
    "the conflict's claim dropped": _conflict_claim_dropped,
    "a new line marked contested by a conflict of other events": _contested_without_cause,
    "a side's line shown uncontested": _side_shown_uncontested,
    "a new claim stating a side of the conflict as fact": _conflict_side_asserted,
    "the unresolved conflict not reported": _conflict_not_reported,
}


#: where the conflict's sides are: the base's events, or the tail's (the base knew none)
SIDES = {
    "among the base's events": (BASE + RIVALS, (CONFLICT,), TAIL),
    "among the tail's events": (BASE, (), RIVALS + TAIL),
}


@pytest.mark.parametrize("sides", SIDES.values(), ids=SIDES.keys())
@pytest.mark.parametrize("mutation", CONFLICT_MUTATIONS.values(), ids=CONFLICT_MUTATIONS.keys())
def test_an_unresolved_conflict_is_judged_alike(
    mutation: Callable[[Output], Output],
    sides: tuple[tuple[Event, ...], tuple[Conflict, ...], tuple[Event, ...]],
) -> None:
    base_events, base_conflicts, tail = sides
    gate_delta.forget_judged()
    base_scope = request(base_events, conflicts=base_conflicts)
    base = generated(base_scope)
    assert on_delta(base_scope, base).passed
    scope = request(base_events + tail, base, conflicts=(CONFLICT,))
    output = generated(scope)
    mutated = mutation(output)
    expected = whole(scope, mutated)
    assert not expected.passed
    assert on_delta(scope, mutated) == expected
    assert on_delta(scope, output) == whole(scope, output) == GateReport(True, (), len(scope.items))


def test_a_conflict_among_the_tail_is_judged_on_the_delta(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate_delta.forget_judged()
    base_scope = request(BASE)
    base = generated(base_scope)
    assert on_delta(base_scope, base).passed
    scope = request(BASE + RIVALS + TAIL, base, conflicts=(CONFLICT,))
    output = generated(scope)
    expected = whole(scope, output)
    assert expected.passed, expected.failures
    assert output.unresolved_conflicts == (CONFLICT.id,)
    runs = whole_gate_runs(monkeypatch)
    assert on_delta(scope, output) == expected
    assert runs == []


# ---------------------------------------------------------------------------
# random subjects, random tails, random edits: both gates always agree

POOL = (
    *BASE_TEXTS,
    *TAIL_TEXTS,
    "Never store passwords in the wiki.",
    "TODO: renew the domain before 2024-06-30.",
    "The deposit was $250, paid on 2024-04-12.",
    "Bob is allergic to peanuts.",
    "Thanks, see you tomorrow!",
    "The server has 64 GB of memory.",
    "I no longer drink coffee.",
    "Carol said the launch moved to 2024-05-09.",
)


def _edited(output: Output, edit: int, pick: int) -> Output:
    """One of eight edits of a passing output, at position ``pick`` (most are rejected)."""
    claims, statements = list(output.claims), list(output.statements)
    if edit == 0 and claims:
        del claims[pick % len(claims)]
    elif edit == 1 and statements:
        del statements[pick % len(statements)]
    elif edit == 2 and output.cold:
        cold = list(output.cold)
        del cold[pick % len(cold)]
        return replace(output, cold=tuple(cold))
    elif edit == 3 and claims:
        claim = claims[pick % len(claims)]
        claims[pick % len(claims)] = replace(claim, derived_from=claim.derived_from[:1])
    elif edit == 4 and claims:
        claim = claims[pick % len(claims)]
        claims[pick % len(claims)] = replace(claim, value=f"{claim.value}!")
    elif edit == 5 and statements:
        statement = statements[pick % len(statements)]
        statements[pick % len(statements)] = replace(statement, kind="constraint")
    elif edit == 6 and statements:
        statement = statements[pick % len(statements)]
        statements[pick % len(statements)] = replace(statement, text=statement.text[:-1])
    elif edit == 7 and statements:
        moved = statements.pop(pick % len(statements))
        return replace(
            output, statements=tuple(statements), cold=(*output.cold, *moved.derived_from)
        )
    return replace(output, claims=tuple(claims), statements=tuple(statements))


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.sampled_from(POOL), min_size=2, max_size=14),
    split=st.integers(min_value=1, max_value=13),
    contested=st.sampled_from(("no", "in the base", "in the tail")),
    edit=st.integers(min_value=-1, max_value=7),
    pick=st.integers(min_value=0, max_value=50),
)
def test_both_gates_agree_on_random_tails_and_edits(
    texts: list[str], split: int, contested: str, edit: int, pick: int
) -> None:
    events = tuple(event(n + 1, text) for n, text in enumerate(texts))
    in_base = contested == "in the base" and len(events) > 2  # both sides among the base's
    split = min(max(split, 2 if in_base else 1), len(events) - 1)
    conflicts: tuple[Conflict, ...] = ()
    if in_base:
        conflicts = (Conflict(id="c-1", a=events[0].id, b=events[1].id),)
    elif contested == "in the tail" and len(events) - split >= 2:  # the base knew none
        conflicts = (Conflict(id="c-1", a=events[split].id, b=events[-1].id),)
    gate_delta.forget_judged()
    base_scope = request(events[:split], conflicts=conflicts if in_base else ())
    base = generated(base_scope)
    assert on_delta(base_scope, base).passed
    scope = replace(request(events, base, conflicts), parent_covers_through=split)
    output = generated(scope)
    if edit >= 0:
        output = _edited(output, edit, pick)
    assert on_delta(scope, output) == whole(scope, output)


def _without(output: Output, event_id: str) -> Output:
    """``output`` with the statement of ``event_id`` taken out and its event in cold."""
    kept = tuple(s for s in output.statements if event_id not in s.derived_from)
    return replace(output, statements=kept, cold=(*output.cold, event_id))


def test_an_update_in_the_tail_moved_to_cold_fails_on_the_delta_as_whole() -> None:
    """A tail event that updates a base event (docs/updates.md) must be shown with it."""
    gate_delta.forget_judged()
    base_scope = request((*BASE, event(len(BASE) + 1, "I live in Porto.")))
    base = generated(base_scope)
    assert on_delta(base_scope, base).passed
    moved = event(len(BASE) + 2, "We moved to Lisbon this weekend.")
    scope = request((*base_scope.events, moved), base)
    honest = generated(scope)
    assert whole(scope, honest).passed  # not on the delta: that would replace the base
    mutated = _without(honest, moved.id)
    assert codes_of(on_delta(scope, mutated)) == codes_of(whole(scope, mutated))
    assert "updated_shown_as_current" in codes_of(on_delta(scope, mutated))
    gate_delta.forget_judged()


def test_a_base_update_moved_to_cold_later_fails_on_the_delta() -> None:
    """The base showed both; a child that moves the newer one to cold is refused."""
    gate_delta.forget_judged()
    both = (*BASE, event(8, "I live in Porto."), event(9, "We moved to Lisbon this weekend."))
    base_scope = request(both)
    base = generated(base_scope)
    assert on_delta(base_scope, base).passed
    scope = request((*both, event(10, "We talked about the film again.")), base)
    mutated = _without(generated(scope), "e9")
    assert "updated_shown_as_current" in codes_of(on_delta(scope, mutated))
    gate_delta.forget_judged()


def codes_of(report: GateReport) -> set[str]:
    return {f.code for f in report.failures}
