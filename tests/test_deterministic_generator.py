"""The built-in generator passes the gate on fixed samples and on random batches."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlineage.consolidation.gate import check
from memlineage.consolidation.generators.base import GenerationRequest, Generator
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.parse import parse_output
from memlineage.consolidation.render import render_summary
from memlineage.consolidation.samples import SAMPLES, Sample
from memlineage.meaning.extract import expected_open_items, extract_items
from memlineage.model import Conflict, Event, Fact


def run(
    events: tuple[Event, ...], conflicts: tuple[Conflict, ...], budget: int | None = None
) -> Any:
    items = extract_items(events, conflicts)
    open_items = expected_open_items(events)
    request = GenerationRequest("u", events, tuple(items), conflicts, open_items, budget=budget)
    raw = DeterministicGenerator().generate(request)
    output = parse_output(raw)
    return raw, output, check(items, conflicts, open_items, output, events)


def test_fills_the_generator_protocol() -> None:
    generator: Generator = DeterministicGenerator()
    assert (generator.name, generator.model_snapshot) == ("deterministic", "builtin")
    assert generator.prompt_version


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_passes_the_gate_on_fixed_samples(sample: Sample) -> None:
    raw, output, report = run(sample.events, sample.conflicts)
    assert report.passed, report.failures
    assert output.to_json() == raw  # exactly the schema
    assert list(output.open_items) == list(expected_open_items(sample.events))
    assert list(output.unresolved_conflicts) == sorted(c.id for c in sample.conflicts)


def test_contested_statements_are_never_asserted() -> None:
    sample = next(s for s in SAMPLES if s.conflicts)
    _, output, _ = run(sample.events, sample.conflicts)
    sides = {sample.conflicts[0].a, sample.conflicts[0].b}
    for claim in output.claims:
        if sides & set(claim.derived_from):
            assert claim.kind == "conflict"


def test_over_budget_moves_narrative_to_cold_and_keeps_every_item() -> None:
    events = (
        Event(id="n1", subject="u", text="We chatted about the weather and lunch."),
        Event(id="n2", subject="u", text="TODO: book the venue.", kind="task"),
        Event(id="k1", subject="u", text="Never deploy on Fridays; budget $500."),
    )
    _, roomy, report = run(events, ())
    assert report.passed and roomy.cold == ()
    assert "We chatted about the weather and lunch." in render_summary(roomy.statements)
    _, tight, report = run(events, (), budget=5)
    assert report.passed, report.failures
    assert tight.cold == ("n1",)  # the open item stays, whatever the budget
    rendered = render_summary(tight.statements)
    assert "weather" not in rendered
    assert "TODO: book the venue." in rendered
    assert "Never deploy on Fridays; budget $500." in rendered
    assert tight.claims == roomy.claims


def test_summary_never_names_an_uncarried_number() -> None:
    events = (Event(id="r", subject="u", text="In 3 days we ship.", at=None),)  # no anchor
    _, _, report = run(events, ())
    assert report.passed, report.failures


# ---------------------------------------------------------------------------
# random batches

FRAGMENTS = st.sampled_from(
    [
        "Never deploy on Fridays.",
        "Always run the tests before {id}.",
        "Budget is at most ${n}.",
        "The run was {n} km, not {n} mi.",
        "I'm not unwilling to travel {n} hours.",
        "He never fails to reply within {n} min.",
        "Grant read:billing but revoke write:repo.",
        "Email {mail} about {id} by {date}.",
        "Meet tomorrow at {h}:30.",
        "Upload limit is {n} MB; usage at {n}%.",
        "We decided to use PostgreSQL {n}.",
        "I prefer dark mode.",
        "TODO: renew the certificate in {n} days.",
        "We chatted about the weather.",
        "Account {acct} was charged €{n}.",
        "Temperature hit -{n} °C, or {n}°F.",
        "Between {n} and {n} kg is fine.",
        "Wire {n},{n}00 USD to IBAN DE89 3704 0044 0532 0130 00.",
        "See https://example.com/{id} and 3f2b1c9e-8d4a-4f6b-9c2e-1a7d5e3b9f00.",
        "",
    ]
)


@st.composite
def events_(draw: st.DrawFn, prefix: str = "m", size: int = 6) -> tuple[Event, ...]:
    count = draw(st.integers(1, size))
    events = []
    for i in range(count):
        parts = draw(st.lists(FRAGMENTS, min_size=1, max_size=3))
        text = " ".join(parts).format(
            n=draw(st.integers(0, 9999)),
            id=draw(st.sampled_from(["ORION-12", "VEGA-3", "PAY-77"])),
            mail=draw(st.sampled_from(["a@x.com", "b@y.org"])),
            date=draw(st.sampled_from(["March 5, 2024", "2024-04-01", "next Friday"])),
            h=draw(st.integers(0, 23)),
            acct=draw(st.integers(100000, 99999999)),
        )
        facts = draw(
            st.lists(
                st.builds(
                    Fact,
                    key=st.sampled_from(["theme", "limit", "owner"]),
                    value=st.one_of(st.integers(-99, 99), st.sampled_from(["dark", "x y"]),
                                    st.booleans()),
                    unit=st.sampled_from([None, "km", "USD", "%"]),
                    polarity=st.booleans(),
                ),
                max_size=2,
            )
        )  # fmt: skip
        events.append(
            Event(
                id=f"{prefix}-{i}",
                subject="u",
                text=text,
                at=draw(
                    st.sampled_from([None, "2024-03-01T10:00:00Z", "2023-12-31T23:00:00+02:00"])
                ),
                kind=draw(st.sampled_from([None, "constraint", "preference", "decision", "task"])),
                project=draw(st.sampled_from([None, "orion", "vega"])),
                facts=tuple(facts),
            )
        )
    return tuple(events)


@st.composite
def batches(draw: st.DrawFn) -> tuple[tuple[Event, ...], tuple[Conflict, ...]]:
    events = draw(events_())
    ids = [e.id for e in events]
    conflicts: list[Conflict] = []
    if len(ids) >= 2:
        for n in range(draw(st.integers(0, 2))):
            a, b = draw(st.lists(st.sampled_from(ids), min_size=2, max_size=2, unique=True))
            winner = draw(st.sampled_from([None, None, a]))
            conflicts.append(Conflict(f"c-{n}", a, b, key="k", winner=winner))
    return events, tuple(conflicts)


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(batches(), st.one_of(st.none(), st.integers(1, 200)))
def test_passes_the_gate_on_random_batches(
    batch: tuple[tuple[Event, ...], tuple[Conflict, ...]], budget: int | None
) -> None:
    events, conflicts = batch
    _, output, report = run(events, conflicts, budget)
    assert report.passed, report.failures
    assert set(output.cold) <= {e.id for e in events}


def _by_source(events: tuple[Event, ...], conflicts: tuple[Conflict, ...]) -> Any:
    items = extract_items(events, conflicts)
    ids = {e.id for e in events}
    return sorted((i.id, i.key) for i in items if i.source in ids), sorted(
        i.key for i in items if i.kind == "conflict"
    )


@SETTINGS
@given(batches(), events_(prefix="z", size=4), st.randoms(use_true_random=False))
def test_unrelated_events_and_reordering_change_nothing(
    batch: tuple[tuple[Event, ...], tuple[Conflict, ...]],
    unrelated: tuple[Event, ...],
    random: Any,
) -> None:
    events, conflicts = batch
    before = _by_source(events, conflicts)
    shuffled = list(events + unrelated)
    random.shuffle(shuffled)
    items_after = extract_items(shuffled, conflicts)
    own = {e.id for e in events}
    assert sorted((i.id, i.key) for i in items_after if i.source in own) == before[0]
    assert sorted(i.key for i in items_after if i.kind == "conflict") == before[1]
    # and the regrouped batch still passes the gate
    _, _, report = run(tuple(shuffled), conflicts)
    assert report.passed, report.failures


@SETTINGS
@given(batches())
def test_running_twice_gives_the_same_output(
    batch: tuple[tuple[Event, ...], tuple[Conflict, ...]],
) -> None:
    events, conflicts = batch
    assert run(events, conflicts)[0] == run(events, conflicts)[0]


def test_a_remembered_event_is_shown_as_its_context_now_says() -> None:
    """The generator remembers each event's lines between runs (an incremental run meets
    every older event again); what a reader sees still follows the event's context now:
    a conflict declared since marks both lines contested, and ``clear_caches`` forgets."""
    from memlineage.consolidation.generators import deterministic
    from memlineage.meaning.extract import clear_caches
    from memlineage.meaning.extract import items as extract_items_module

    madrid = Event(id="o-1", subject="u", text="My office is in Madrid.", seq=1)
    seville = Event(id="o-2", subject="u", text="My office is in Seville.", seq=2)
    _, calm, _ = run((madrid, seville), ())
    assert [s.contested for s in calm.statements] == [None, None]
    assert deterministic._single_unit.cache_info().currsize >= 2
    conflict = Conflict("c-9", "o-1", "o-2", key="office")
    _, contested, report = run((madrid, seville), (conflict,))
    assert report.passed
    assert [(s.text, s.contested) for s in contested.statements] == [
        ("My office is in Madrid.", "c-9"),
        ("My office is in Seville.", "c-9"),
    ]
    assert render_summary(contested.statements).count("[c-9]") == 2
    clear_caches()
    assert deterministic._single_unit.cache_info().currsize == 0
    assert deterministic._small_talk.cache_info().currsize == 0
    assert extract_items_module._marks_open.cache_info().currsize == 0
