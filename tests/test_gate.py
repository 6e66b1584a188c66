"""The fidelity gate: fixed samples of the source document, and mutation tests.

Every mutant of a correct output must be rejected with the right code, and
the unmutated output must pass.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from memlineage.consolidation.gate import CODES, carried_values, check
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.parse import parse_output
from memlineage.consolidation.samples import BY_NAME, SAMPLES, Sample, ev
from memlineage.meaning.binding import binding_reasons, shown_kind
from memlineage.meaning.extract import expected_open_items, extract_items, text_values
from memlineage.meaning.values import canonical
from memlineage.model import Claim, Conflict, Event, GateReport, Item, Output, Statement


def codes(report: GateReport) -> set[str]:
    return {f.code for f in report.failures}


def claim_for(output: Output, item: Item) -> Claim:
    canon = canonical(item.value, item.unit)
    return next(
        c for c in output.claims if c.key == item.key and canonical(c.value, c.unit) == canon
    )


# ---------------------------------------------------------------------------
# fixed samples


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.name)
def test_correct_output_passes(sample: Sample) -> None:
    report = sample.gate(sample.output())
    assert report.passed, report.failures
    assert report.checked_items == len(sample.items())


def test_double_negation_keeps_affirmed_polarity() -> None:
    sample = BY_NAME["double_negation"]
    items = {i.source: i for i in sample.items() if i.kind in ("negation", "constraint")}
    assert items["m-1"].polarity is True
    assert items["m-2"].polarity is True
    output = sample.output()
    flipped = tuple(
        replace(c, polarity=False) if c.key == items["m-1"].key else c for c in output.claims
    )
    report = sample.gate(replace(output, claims=flipped))
    assert [(f.code, f.item) for f in report.failures] == [("polarity_flipped", items["m-1"].id)]


@pytest.mark.parametrize(
    ("value", "code"), [(4050, "value_changed"), (4500.0, None), (4501, "value_changed")]
)
def test_close_numbers(value: float, code: str | None) -> None:
    sample = BY_NAME["close_numbers"]
    money = next(i for i in sample.items() if i.kind == "money")
    output = sample.output()
    claims = tuple(replace(c, value=value) if c.key == money.key else c for c in output.claims)
    report = sample.gate(replace(output, claims=claims))
    if code is None:
        assert report.passed, report.failures
    else:
        assert (code, money.id) in {(f.code, f.item) for f in report.failures}


@pytest.mark.parametrize(
    ("value", "unit", "code"),
    [
        (5000, "m", None),
        (5000, "meters", None),
        (0.005, "Mm", "unit_changed"),  # not a unit the table knows
        (5, "mi", "unit_changed"),
        (5, "m", "unit_changed"),
        (5, "kg", "unit_changed"),
        (6, "km", "value_changed"),
    ],
)
def test_unit_conversion(value: float, unit: str, code: str | None) -> None:
    sample = BY_NAME["unit_conversion"]
    run = next(i for i in sample.items() if i.kind == "number" and i.unit == "kilometer")
    output = sample.output()
    claims = tuple(
        replace(c, value=value, unit=unit) if c.key == run.key else c for c in output.claims
    )
    report = sample.gate(replace(output, claims=claims))
    if code is None:
        assert report.passed, report.failures
    else:
        assert (code, run.id) in {(f.code, f.item) for f in report.failures}


def test_same_name_entities_get_apart_keys() -> None:
    items = BY_NAME["same_name_entities"].items()
    budgets = [i for i in items if i.kind == "money"]
    assert len(budgets) == 2
    assert budgets[0].key != budgets[1].key  # same name and amount, different email
    output = BY_NAME["same_name_entities"].output()
    # merging the two into one claim under one key loses the second entity
    merged = tuple(c for c in output.claims if c.key != budgets[1].key)
    report = BY_NAME["same_name_entities"].gate(replace(output, claims=merged))
    assert ("missing", budgets[1].id) in {(f.code, f.item) for f in report.failures}


def test_cross_project_preferences_stay_apart() -> None:
    sample = BY_NAME["cross_project_preferences"]
    tabs = [i for i in sample.items() if "tabs" in str(i.value)]
    assert {i.key.split("/")[0] for i in tabs} == {"orion", "vega"}
    output = sample.output()
    # one claim carrying both sources under the orion key leaves the vega item unclaimed
    orion = next(c for c in output.claims if c.key == tabs[0].key)
    merged = tuple(
        replace(c, derived_from=("m-1", "m-2")) if c is orion else c
        for c in output.claims
        if c.key != tabs[1].key
    )
    report = sample.gate(replace(output, claims=merged))
    assert ("missing", tabs[1].id) in {(f.code, f.item) for f in report.failures}


def test_revoked_source_is_unknown() -> None:
    sample = BY_NAME["revoked_sources"]
    output = sample.output()
    stale = Claim("global/number/approvals", 3, None, True, "number", ("m-2",), "3 approvals")
    report = sample.gate(replace(output, claims=(*output.claims, stale)))
    assert [(f.code, f.item) for f in report.failures] == [("unknown_source", stale.key)]
    also = tuple(replace(c, derived_from=(*c.derived_from, "m-2")) for c in output.claims[:1])
    report = sample.gate(replace(output, claims=also + output.claims[1:]))
    assert codes(report) == {"unknown_source"}


def test_scope_polarity_in_revoked_sample() -> None:
    items = BY_NAME["revoked_sources"].items()
    scopes = {i.value: i.polarity for i in items if i.kind == "scope"}
    assert scopes == {"read:billing": True, "write:billing": False}


def test_conflicting_decisions() -> None:
    sample = BY_NAME["conflicting_decisions"]
    output = sample.output()
    assert output.unresolved_conflicts == ("c-1",)
    # asserting one side as the decision
    asserted = tuple(
        replace(c, kind="decision") if c.derived_from == ("m-1",) else c for c in output.claims
    )
    report = sample.gate(replace(output, claims=asserted))
    assert codes(report) == {"conflict_asserted"}
    # hiding the conflict
    report = sample.gate(replace(output, unresolved_conflicts=()))
    assert [(f.code, f.item) for f in report.failures] == [("conflicts_mismatch", "c-1")]
    # a conflict that is not one
    report = sample.gate(replace(output, unresolved_conflicts=("c-1", "c-9")))
    assert [(f.code, f.item) for f in report.failures] == [("conflicts_mismatch", "c-9")]
    report = sample.gate(replace(output, unresolved_conflicts=("c-1", "c-1")))
    assert codes(report) == {"conflicts_mismatch"}


def test_resolved_conflicts_are_not_expected() -> None:
    sample = BY_NAME["conflicting_decisions"]
    resolved = (replace(sample.conflicts[0], winner="m-2"),)
    assert all(i.kind != "conflict" for i in extract_items(sample.events, resolved))


# ---------------------------------------------------------------------------
# mutation tests

Mutant = tuple[str, str, Output, set[str]]  # kind, description, output, ids it must name


def _swap(output: Output, index: int, claim: Claim | None) -> Output:
    claims = list(output.claims)
    if claim is None:
        del claims[index]
    else:
        claims[index] = claim
    return replace(output, claims=tuple(claims))


def _items_of(claim: Claim, items: list[Item]) -> list[Item]:
    canon = canonical(claim.value, claim.unit)
    return [
        i
        for i in items
        if i.key == claim.key
        and canonical(i.value, i.unit) == canon
        and i.polarity == claim.polarity
        and i.source in claim.derived_from
    ]


def _digit_variants(text: str) -> Iterator[str]:
    """Every one-digit change, plus a swap of two adjacent digits (4500 -> 4050)."""
    for m in re.finditer(r"\d", text):
        i = m.start()
        yield text[:i] + str((int(text[i]) + 1) % 10) + text[i + 1 :]
        if i + 1 < len(text) and text[i + 1].isdigit() and text[i] != text[i + 1]:
            yield text[:i] + text[i + 1] + text[i] + text[i + 2 :]


def _number_variants(value: float) -> Iterator[float]:
    text = str(value)
    for variant in _digit_variants(text):
        try:
            yield type(value)(variant)
        except ValueError:
            continue
    yield value + 1
    yield value * 1.001  # a close value


_OTHER_UNITS = {"meter": "kilogram", "kilogram": "meter", "second": "meter", "bit": "second"}


def _unit_variants(unit: str) -> Iterator[str]:
    family = canonical(1, unit)[0]
    if family.startswith("currency:"):
        yield "EUR" if unit != "EUR" else "USD"
        return
    yield _OTHER_UNITS.get(family, "meter")  # another dimension
    yield {"kilometer": "meter", "meter": "kilometer"}.get(unit, "kilo" + unit)  # magnitude


def mutants(sample: Sample) -> Iterator[Mutant]:
    output = sample.output()
    items = sample.items()
    values_by_key: dict[str, set[tuple[str, str]]] = {}
    for item in items:
        values_by_key.setdefault(item.key, set()).add(canonical(item.value, item.unit))
    for n, claim in enumerate(output.claims):
        owned = {i.id for i in _items_of(claim, items)}
        conflict_item = {i.id for i in items if i.kind == "conflict" and i.key == claim.key}
        yield "drop_claim", claim.key, _swap(output, n, None), owned | conflict_item
        yield (
            "flip_polarity",
            claim.key,
            _swap(output, n, replace(claim, polarity=not claim.polarity)),
            owned,
        )
        for value in _value_variants(claim):
            if canonical(value, claim.unit) in values_by_key[claim.key]:
                continue  # the variant is another item's value: not a change of this one
            yield (
                "perturb_number",
                f"{claim.key}={value!r}",
                _swap(output, n, replace(claim, value=value)),
                owned,
            )
        if claim.unit:
            for unit in _unit_variants(claim.unit):
                yield (
                    "change_unit",
                    f"{claim.key} {unit}",
                    _swap(output, n, replace(claim, unit=unit)),
                    owned,
                )
        for source in claim.derived_from:
            dropped = tuple(d for d in claim.derived_from if d != source)
            must = {i.id for i in items if i.id in owned | conflict_item and i.source == source}
            if claim.key.startswith("conflict/"):
                must = conflict_item
            yield (
                "drop_derivation",
                f"{claim.key} -{source}",
                _swap(output, n, replace(claim, derived_from=dropped)),
                must,
            )
        if claim.kind == "conflict":
            kind = next((i.kind for i in items if i.id in owned), "decision")
            as_fact = replace(claim, kind=kind if kind != "conflict" else "decision")
            yield "conflict_as_fact", claim.key, _swap(output, n, as_fact), {claim.key}
    for conflict_id in output.unresolved_conflicts:
        hidden = tuple(c for c in output.unresolved_conflicts if c != conflict_id)
        yield (
            "conflict_as_fact",
            f"hide {conflict_id}",
            replace(output, unresolved_conflicts=hidden),
            {conflict_id},
        )
    source = sample.events[0].id
    for value, unit in ((987654, "kilometer"), ("the moon is made of cheese", None), (True, None)):
        extra = Claim("global/fact/invented", value, unit, True, "fact", (source,), "")
        yield (
            "unsupported_claim",
            repr(value),
            replace(output, claims=(*output.claims, extra)),
            {extra.key},
        )
    for open_id in output.open_items:
        kept = tuple(o for o in output.open_items if o != open_id)
        yield "drop_open_item", open_id, replace(output, open_items=kept), {open_id}
    yield from _statement_mutants(sample, output)


def _value_variants(claim: Claim) -> Iterator[object]:
    value = claim.value
    if isinstance(value, bool):
        return
    if isinstance(value, int | float):
        yield from _number_variants(value)
    elif any(ch.isdigit() for ch in value):
        yield from _digit_variants(value)


def _statement_mutants(sample: Sample, output: Output) -> Iterator[Mutant]:
    """Drop a statement, cite a wrong event, insert a number, remove ``contested``."""
    must_state = {i.source for i in sample.items()} | set(expected_open_items(sample.events))
    must_state |= {side for c in sample.conflicts if not c.resolved for side in (c.a, c.b)}
    carried = carried_values(output.claims)
    for n, statement in enumerate(output.statements):
        name = f"statements[{n}]"
        rest = output.statements[:n] + output.statements[n + 1 :]
        still = {s for st in rest for s in st.derived_from}
        claimed = {s for c in output.claims for s in c.derived_from}
        lost = {e for e in statement.derived_from if e not in still}
        named = {e for e in lost if e in must_state or (e not in claimed and e not in output.cold)}
        if named:
            yield "drop_statement", name, replace(output, statements=rest), named
        wrong = replace(statement, derived_from=("m-404",))
        yield "cite_wrong_event", name, _restate(output, n, wrong), {name}
        invented = replace(statement, text=f"{statement.text} It took 9731 hours.")
        yield "insert_number", name, _restate(output, n, invented), {name}
        for m in re.finditer(r"\d", statement.text):
            for digit in "0123456789":
                text = statement.text[: m.start()] + digit + statement.text[m.end() :]
                if any(canonical(v, u) not in carried for v, u, _ in text_values(text)):
                    changed = replace(statement, text=text)
                    yield "insert_number", f"{name}:{text}", _restate(output, n, changed), {name}
                    break
        if statement.contested is not None:
            bare = replace(statement, contested=None)
            yield "remove_contested", name, _restate(output, n, bare), {name}
        yield from _field_mutants(sample, output, n)
        yield from _unit_mutants(output, n, statement)


def _field_mutants(sample: Sample, output: Output, n: int) -> Iterator[Mutant]:
    """Move a statement's date, put it under another project, give it a kind none supports."""
    statement, name = output.statements[n], f"statements[{n}]"
    events = {e.id: e for e in sample.events}
    cited = [events[s] for s in statement.derived_from]
    if statement.at is not None:
        for at in ("2024-03-25T10:00:00Z", "2023-03-01T10:00:00Z", "2024-03-01T10:00:00-14:00"):
            if at != statement.at:
                moved = replace(statement, at=at)
                yield "move_date", f"{name} {at}", _restate(output, n, moved), {name}
        yield (
            "move_date",
            f"{name} undated",
            _restate(output, n, replace(statement, at=None)),
            {name},
        )
    for project in ("zeus", None, *sorted({e.project for e in sample.events if e.project})):
        if project not in {e.project for e in cited}:
            moved = replace(statement, project=project)
            yield "change_project", f"{name} {project}", _restate(output, n, moved), {name}
    said = {e.kind for e in cited}
    said |= {i.kind for i in sample.items() if i.source in statement.derived_from}
    for event in cited:  # the kind a binding event is shown under is said too
        own = [i for i in sample.items() if i.source == event.id]
        said.add(shown_kind(binding_reasons(event, own, open_items=set(output.open_items))))
    for kind in ("constraint", "decision", "preference", "task"):
        opened = kind == "task" and set(statement.derived_from) & set(output.open_items)
        if kind not in said and not opened:
            stronger = replace(statement, kind=kind)
            yield "change_kind", f"{name} {kind}", _restate(output, n, stronger), {name}
            break


def _unit_mutants(output: Output, n: int, statement: Statement) -> Iterator[Mutant]:
    """Show an event in pieces without a mark, or two events' words in one line."""
    name = f"statements[{n}]"
    words = statement.text.split()
    if len(words) > 1:
        cut = replace(statement, text=" ".join(words[: len(words) // 2 or 1]))
        yield "cut_event", name, _restate(output, n, cut), {name}
    marked = replace(statement, part=(1, 2))
    yield "mark_whole_as_part", name, _restate(output, n, marked), {name}
    following = output.statements[n + 1] if n + 1 < len(output.statements) else None
    if following is not None and following.text != statement.text:
        merged = replace(
            statement,
            text=f"{statement.text} {following.text}",
            derived_from=statement.derived_from + following.derived_from,
            claims=statement.claims + following.claims,
        )
        statements = list(output.statements)
        statements[n : n + 2] = [merged]
        yield "merge_events", name, replace(output, statements=tuple(statements)), {name}


def _restate(output: Output, index: int, statement: Statement) -> Output:
    statements = list(output.statements)
    statements[index] = statement
    return replace(output, statements=tuple(statements))


EXPECTED = {
    "drop_claim": {"missing"},
    "flip_polarity": {"polarity_flipped"},
    "perturb_number": {"value_changed"},
    "change_unit": {"unit_changed"},
    "drop_derivation": {"derivation_missing"},
    "conflict_as_fact": {"conflict_asserted", "conflicts_mismatch"},
    "unsupported_claim": {"unsupported_claim"},
    "drop_open_item": {"open_item_dropped"},
    "drop_statement": {"statement_missing", "event_dropped"},
    "cite_wrong_event": {"statement_unsupported"},
    "insert_number": {"statement_value_unsupported"},
    "remove_contested": {"conflict_asserted"},
    "move_date": {"statement_at_unsupported"},
    "change_project": {"statement_project_unsupported"},
    "change_kind": {"statement_kind_unsupported"},
    "cut_event": {"statement_part_unmarked"},
    "mark_whole_as_part": {"statement_part_unmarked"},
    "merge_events": {"statement_events_merged"},
}


def all_mutants() -> list[tuple[str, Sample, Mutant]]:
    return [(s.name, s, m) for s in SAMPLES for m in mutants(s)]


def test_every_mutation_kind_is_exercised() -> None:
    kinds = {m[0] for _, _, m in all_mutants()}
    assert kinds == set(EXPECTED)
    assert len(all_mutants()) > 200


@pytest.mark.parametrize(
    ("name", "sample", "mutant"),
    all_mutants(),
    ids=[f"{n}:{m[0]}:{m[1][:40]}" for n, _, m in all_mutants()],
)
def test_mutant_is_rejected_with_the_right_code(name: str, sample: Sample, mutant: Mutant) -> None:
    kind, _, output, must_name = mutant
    report = sample.gate(output)
    assert not report.passed
    named = {(f.code, f.item) for f in report.failures}
    right = {item for code, item in named if code in EXPECTED[kind]}
    assert right, f"{kind}: got {report.failures}"
    assert must_name <= right, f"{kind}: should name {must_name}, got {report.failures}"
    assert codes(report) <= set(CODES)


def test_mutation_score_is_total() -> None:
    rejected = sum(not s.gate(m[2]).passed for _, s, m in all_mutants())
    assert rejected == len(all_mutants())


def test_failures_are_reported_once_per_offence_and_serialise() -> None:
    sample = BY_NAME["close_numbers"]
    report = sample.gate(replace(sample.output(), claims=()))
    # the statements now name values and claims nobody carries: offences of their own
    missing = [f for f in report.failures if f.code == "missing"]
    assert [f.item for f in missing] == [i.id for i in sample.items()]
    assert len(set(report.failures)) == len(report.failures)
    assert report.to_json()["failures"][0]["code"] in CODES
    assert dataclasses.asdict(report)["passed"] is False


def _tea() -> tuple[list[Event], list[Item], Output]:
    """A preference and its reversal, as the reader's recall orders them by date."""
    events = [
        ev("m-1", "I love green tea.", at="2024-03-06T09:00:00Z", kind="preference"),
        ev("m-2", "I no longer drink green tea.", at="2024-03-25T09:00:00Z", project="home"),
    ]
    output = parse_output(DeterministicGenerator().generate(
        GenerationRequest("user-7", tuple(events), (), (), ())))  # fmt: skip
    return events, [], output


def _fields(output: Output, **changes: Any) -> Output:
    return _restate(output, 0, replace(output.statements[0], **changes))


def test_a_statement_shows_its_event_s_date_project_and_kind() -> None:
    events, items, output = _tea()
    assert check(items, (), (), output, events).passed
    for changes, code in [
        ({"at": "2024-03-25T09:00:00Z"}, "statement_at_unsupported"),  # above its reversal
        ({"at": None}, "statement_at_unsupported"),
        ({"at": "not a date"}, "statement_at_unsupported"),
        ({"project": "zeus"}, "statement_project_unsupported"),
        ({"project": "home"}, "statement_project_unsupported"),  # another event's project
        ({"kind": "constraint"}, "statement_kind_unsupported"),
        ({"kind": "fact"}, "statement_kind_unsupported"),  # no item: not a fact
    ]:
        report = check(items, (), (), _fields(output, **changes), events)
        assert [(f.code, f.item) for f in report.failures] == [(code, "statements[0]")], changes
    same_instant = _fields(output, at="2024-03-06T10:00:00+01:00")
    assert check(items, (), (), same_instant, events).passed
    assert check(items, (), (), _fields(output, kind=None), events).passed


def test_a_statement_of_several_events_may_carry_a_date_within_theirs() -> None:
    # one line for events whose texts are identical (the only line that cites several)
    said = "I no longer drink green tea."
    events = [
        ev("m-1", said, at="2024-03-06T09:00:00Z"),
        ev("m-2", said, at="2024-03-25T09:00:00Z", project="home"),
    ]
    items: list[Item] = []
    output = parse_output(DeterministicGenerator().generate(
        GenerationRequest("user-7", tuple(events), (), (), ())))  # fmt: skip
    both = replace(output.statements[0], derived_from=("m-1", "m-2"), project=None)
    merged = replace(output, statements=(both,))
    for at, passed in [
        ("2024-03-25T09:00:00Z", True),  # the newest, as the built-in generator writes it
        ("2024-03-06T09:00:00Z", True),
        ("2024-03-10T00:00:00Z", True),
        ("2024-03-26T09:00:00Z", False),
        ("2024-03-05T09:00:00Z", False),
    ]:
        report = check(items, (), (), _restate(merged, 0, replace(both, at=at)), events)
        assert report.passed is passed, (at, report.failures)
    # the project must be one of theirs: m-2's "home" or m-1's none
    home = _restate(merged, 0, replace(both, project="home"))
    assert check(items, (), (), home, events).passed


def test_claims_with_empty_lineage_are_unsupported() -> None:
    sample = BY_NAME["close_numbers"]
    output = sample.output()
    bare = replace(output.claims[0], derived_from=())
    report = sample.gate(_swap(output, 0, bare))
    assert ("unsupported_claim", bare.key) in {(f.code, f.item) for f in report.failures}


def test_open_items_and_cold_outside_the_selection_are_unknown() -> None:
    sample = BY_NAME["conflicting_decisions"]
    output = sample.output()
    report = sample.gate(replace(output, open_items=(*output.open_items, "m-99"), cold=("m-98",)))
    assert {(f.code, f.item) for f in report.failures} == {
        ("unknown_source", "m-99"),
        ("unknown_source", "m-98"),
    }


@pytest.mark.parametrize("wording", ["extractive", "reworded"])
def test_a_restated_statement_names_only_its_own_claims_values(wording: str) -> None:
    """The value check holds beside the wording check, in both modes."""
    reworded = {"extractive": "statement_reworded", "reworded": "statement_meaning_changed"}
    sample = BY_NAME["unit_conversion"]
    output = sample.output()
    n = next(i for i, s in enumerate(output.statements) if s.derived_from == ("m-1",))
    # a unit converted in words is not proven by the wording check: refused, never guessed
    converted = _restate(output, n, replace(output.statements[n], text="The daily run is 5000 m."))
    assert codes(sample.gate(converted, wording)) == {reworded[wording]}
    bad = _restate(output, n, replace(output.statements[n], text="The daily run is 5 mi."))
    assert [(f.code, f.item) for f in sample.gate(bad, wording).failures] == [
        ("statement_value_unsupported", f"statements[{n}]"),
        (reworded[wording], f"statements[{n}]"),
    ]
    # 512 MB is a claim of m-2, not of m-1: a statement may not borrow it
    borrowed = _restate(output, n, replace(output.statements[n], text="The limit is 512 MB."))
    assert "statement_value_unsupported" in codes(sample.gate(borrowed, wording))
    # nor copy another event's sentence verbatim while citing its own
    other = "The upload limit is 512 MB and the room is at 21 °C."
    copied = _restate(output, n, replace(output.statements[n], text=other))
    assert "statement_value_unsupported" in codes(sample.gate(copied, wording))


class CountingTuple(tuple):  # type: ignore[type-arg]
    """A tuple that counts how often it is walked: the gate's passes over its input."""

    walks = 0

    def __iter__(self) -> Iterator[Any]:
        CountingTuple.walks += 1
        return super().__iter__()


def test_gate_walks_its_input_a_fixed_number_of_times() -> None:
    """Linear, not quadratic: the passes over items and claims do not grow with their number."""

    def passes(n: int) -> int:
        events = tuple(ev(f"m-{i}", f"Ticket T-{i} costs ${i}.") for i in range(n))
        items = extract_items(events)
        output = parse_output(DeterministicGenerator().generate(
            GenerationRequest("u", events, tuple(items), (), ())))  # fmt: skip
        counted = replace(output, claims=CountingTuple(output.claims))
        CountingTuple.walks = 0
        assert check(CountingTuple(items), (), (), counted, events).passed
        return CountingTuple.walks

    assert passes(50) == passes(2000) <= 9  # a claim's text is read once more


def test_gate_walks_statements_and_events_a_fixed_number_of_times() -> None:
    """The statement and coverage checks are linear too: passes over statements and events."""

    def passes(n: int) -> int:
        events = tuple(
            ev(f"m-{i}", f"Ticket T-{i} costs ${i}. We talked about the trip {i % 7}.")
            for i in range(n)
        )
        conflicts = (Conflict("c-1", "m-0", "m-1"),)
        items = extract_items(events, conflicts)
        open_items = expected_open_items(events)
        output = parse_output(DeterministicGenerator().generate(
            GenerationRequest("u", events, tuple(items), conflicts, open_items)))  # fmt: skip
        counted = replace(output, statements=CountingTuple(output.statements))
        CountingTuple.walks = 0
        report = check(items, conflicts, open_items, counted, CountingTuple(events))
        assert report.passed, report.failures
        return CountingTuple.walks

    # the wording checks read statements once more, the updates check events once more
    assert passes(50) == passes(2000) <= 8


# ---------------------------------------------------------------------------
# the event is the unit: parts of an event too long for any budget

LONG = " ".join(f"On day {n} the crew logged the weather and checked the pumps." for n in range(30))


def _long_sample() -> Sample:
    return Sample("long_event", (ev("m-1", LONG), ev("m-2", "Never run the pumps dry.")))


def test_a_long_event_is_shown_in_marked_parts_that_pass_the_gate() -> None:
    sample = _long_sample()
    output = sample.output()
    parts = [s for s in output.statements if s.derived_from == ("m-1",)]
    assert len(parts) > 1 and [s.part for s in parts] == [(k, len(parts)) for k in
                                                           range(1, len(parts) + 1)]  # fmt: skip
    assert " ".join(s.text for s in parts) == " ".join(LONG.split())
    report = sample.gate(output)
    assert report.passed, report.failures


def test_a_missing_part_is_rejected_unless_the_event_is_cold() -> None:
    sample = _long_sample()
    output = sample.output()
    first = next(n for n, s in enumerate(output.statements) if s.part and s.part[0] == 1)
    rest = output.statements[:first] + output.statements[first + 1 :]
    report = sample.gate(replace(output, statements=rest))
    assert ("event_parts_incomplete", "m-1") in {(f.code, f.item) for f in report.failures}
    cold = replace(output, statements=rest, cold=(*output.cold, "m-1"))
    assert sample.gate(cold).passed


def test_a_part_with_the_wrong_words_or_number_is_rejected() -> None:
    sample = _long_sample()
    output = sample.output()
    n = next(n for n, s in enumerate(output.statements) if s.part is not None)
    statement = output.statements[n]
    assert statement.part is not None
    for wrong in (
        replace(statement, part=(statement.part[0], statement.part[1] + 1)),
        replace(statement, text=statement.text.rsplit(" ", 1)[0]),
    ):
        report = sample.gate(_restate(output, n, wrong))
        assert ("statement_part_unmarked", f"statements[{n}]") in {
            (f.code, f.item) for f in report.failures
        }


def test_a_binding_event_moved_to_cold_is_rejected() -> None:
    sample = _long_sample()
    output = sample.output()
    rule = [s for s in output.statements if s.derived_from != ("m-2",)]
    report = sample.gate(replace(output, statements=tuple(rule), cold=(*output.cold, "m-2")))
    assert ("statement_missing", "m-2") in {(f.code, f.item) for f in report.failures}


def test_the_collector_pause_restores_what_it_found() -> None:
    """Only the block that turned the cyclic collector off turns it back on."""
    import gc

    from memlineage.consolidation import collector

    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():  # nested: changes nothing
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()  # a host that runs without it keeps it off
    try:
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ValueError), collector.paused():
        raise ValueError("a failing build")
    assert gc.isenabled()


def test_clear_caches_forgets_the_values_claims_carry() -> None:
    from memlineage.consolidation import gate
    from memlineage.meaning.extract import clear_caches

    claim = Claim("k/number/run", "under 200 ms by 2024-05-01", None, True, "fact", ("e",), "")
    carried = gate.carried_values([claim])
    assert gate._value_carries.cache_info().currsize > 0
    clear_caches()
    assert gate._value_carries.cache_info().currsize == 0
    assert gate.carried_values([claim]) == carried
    assert gate.carried_values([replace(claim, value=1)]) != gate.carried_values(
        [replace(claim, value=True)]
    )  # typed: True and 1 carry different values
