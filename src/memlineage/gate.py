"""Step 6: the fidelity gate (DESIGN.md, "The fidelity gate"; docs/gate.md).

Every check is a dict or set lookup per item, claim or id: the gate is linear
in the size of its input. Each failure carries a stable code from
:data:`CODES` and names the offending item id, claim key, conflict id or
event id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .extract import text_values
from .model import Claim, Conflict, Event, GateFailure, GateReport, Item, Output
from .values import Canonical, canonical, format_magnitude, normalize_text, unit_identity

MISSING = "missing"
VALUE_CHANGED = "value_changed"
UNIT_CHANGED = "unit_changed"
POLARITY_FLIPPED = "polarity_flipped"
DERIVATION_MISSING = "derivation_missing"
CONFLICT_ASSERTED = "conflict_asserted"
CONFLICTS_MISMATCH = "conflicts_mismatch"
UNSUPPORTED_CLAIM = "unsupported_claim"
UNKNOWN_SOURCE = "unknown_source"
OPEN_ITEM_DROPPED = "open_item_dropped"
SUMMARY_UNSUPPORTED_NUMBER = "summary_unsupported_number"

CODES: tuple[str, ...] = (
    MISSING,
    VALUE_CHANGED,
    UNIT_CHANGED,
    POLARITY_FLIPPED,
    DERIVATION_MISSING,
    CONFLICT_ASSERTED,
    CONFLICTS_MISMATCH,
    UNSUPPORTED_CLAIM,
    UNKNOWN_SOURCE,
    OPEN_ITEM_DROPPED,
    SUMMARY_UNSUPPORTED_NUMBER,
)

#: the claim kind that marks a statement as contested rather than asserted
CONFLICT_KIND = "conflict"


@dataclass
class _ClaimIndex:
    """The output's claims, keyed for constant-time lookups by item."""

    by_key: dict[str, list[tuple[Claim, Canonical]]] = field(default_factory=dict)
    values: set[tuple[str, Canonical]] = field(default_factory=set)
    value_polarity: set[tuple[str, Canonical, bool]] = field(default_factory=set)
    covered: set[tuple[str, Canonical, bool, str]] = field(default_factory=set)
    # (key, a, b) for every conflict-kind claim naming both sides
    conflict_pairs: set[tuple[str, str, str]] = field(default_factory=set)

    @staticmethod
    def build(claims: Iterable[Claim]) -> _ClaimIndex:
        index = _ClaimIndex()
        for claim in claims:
            canon = canonical(claim.value, claim.unit)
            index.by_key.setdefault(claim.key, []).append((claim, canon))
            index.values.add((claim.key, canon))
            index.value_polarity.add((claim.key, canon, claim.polarity))
            for source in claim.derived_from:
                index.covered.add((claim.key, canon, claim.polarity, source))
        return index


def check(
    items: Sequence[Item],
    conflicts: Sequence[Conflict],
    open_items: Sequence[str],
    output: Output,
    selection: Sequence[Event],
) -> GateReport:
    """Check an output against the must-preserve set of its selection."""
    unresolved = [c for c in conflicts if not c.resolved]
    index = _ClaimIndex.build(output.claims)
    events = {e.id: e for e in selection}
    failures: list[GateFailure] = []
    failures += _check_items(items, index, {c.id: c for c in unresolved})
    failures += _check_conflict_set(unresolved, output.unresolved_conflicts)
    failures += _check_claims(output.claims, events, items, unresolved)
    failures += _check_open_items(open_items, output, events)
    failures += _check_summary(output)
    return GateReport(passed=not failures, failures=tuple(failures), checked_items=len(items))


# ---------------------------------------------------------------------------
# must-preserve items


def _check_items(
    items: Sequence[Item], index: _ClaimIndex, conflicts: dict[str, Conflict]
) -> list[GateFailure]:
    item_values: set[tuple[str, Canonical]] = set()
    canons: list[Canonical] = []
    for item in items:
        canon = canonical(item.value, item.unit)
        canons.append(canon)
        item_values.add((item.key, canon))
    failures = []
    for item, canon in zip(items, canons, strict=True):
        failure = _check_item(item, canon, index, item_values)
        if failure is None and item.kind == CONFLICT_KIND:
            failure = _check_conflict_item(item, index, conflicts)
        if failure is not None:
            failures.append(failure)
    return failures


def _check_item(
    item: Item, canon: Canonical, index: _ClaimIndex, item_values: set[tuple[str, Canonical]]
) -> GateFailure | None:
    key = item.key
    if (key, canon, item.polarity, item.source) in index.covered:
        return None
    if (key, canon, item.polarity) in index.value_polarity:
        return GateFailure(
            DERIVATION_MISSING, item.id, f"{key}: no claim derives from {item.source}"
        )
    if (key, canon) in index.values:
        return GateFailure(POLARITY_FLIPPED, item.id, f"{key}: polarity should be {item.polarity}")
    # a claim under this key whose value matches no item of the key is this item, changed
    for claim, claim_canon in index.by_key.get(key, ()):
        if (key, claim_canon) in item_values:
            continue
        found = f"{claim.value!r} {claim.unit or ''}".strip()
        expected = f"{item.value!r} {item.unit or ''}".strip()
        if unit_identity(claim.unit) != unit_identity(item.unit):
            return GateFailure(UNIT_CHANGED, item.id, f"{key}: {found} is not {expected}")
        return GateFailure(VALUE_CHANGED, item.id, f"{key}: {found} is not {expected}")
    return GateFailure(MISSING, item.id, f"{key}: no claim")


def _check_conflict_item(
    item: Item, index: _ClaimIndex, conflicts: dict[str, Conflict]
) -> GateFailure | None:
    """A conflict's claim must be of kind 'conflict' and derive from both sides."""
    conflict = conflicts.get(str(item.value))
    if conflict is None:
        return None
    for claim, _ in index.by_key.get(item.key, ()):
        sides = set(claim.derived_from)
        if claim.kind == CONFLICT_KIND and conflict.a in sides and conflict.b in sides:
            return None
    return GateFailure(
        DERIVATION_MISSING,
        item.id,
        f"{item.key}: no claim of kind 'conflict' derives from both {conflict.a} and {conflict.b}",
    )


def _check_conflict_set(
    unresolved: Sequence[Conflict], reported: Sequence[str]
) -> list[GateFailure]:
    expected = {c.id for c in unresolved}
    failures = []
    seen: set[str] = set()
    for conflict_id in reported:
        if conflict_id in seen:
            failures.append(GateFailure(CONFLICTS_MISMATCH, conflict_id, "reported twice"))
        elif conflict_id not in expected:
            failures.append(
                GateFailure(CONFLICTS_MISMATCH, conflict_id, "not an unresolved conflict")
            )
        seen.add(conflict_id)
    for conflict in unresolved:
        if conflict.id not in seen:
            failures.append(
                GateFailure(CONFLICTS_MISMATCH, conflict.id, "unresolved but not reported")
            )
    return failures


# ---------------------------------------------------------------------------
# claims: lineage, conflicts, support


def _check_claims(
    claims: Sequence[Claim],
    events: dict[str, Event],
    items: Sequence[Item],
    unresolved: Sequence[Conflict],
) -> list[GateFailure]:
    sides: dict[str, str] = {}
    for conflict in unresolved:
        sides.setdefault(conflict.a, conflict.id)
        sides.setdefault(conflict.b, conflict.id)
    support = _support(events.values(), items)
    texts: dict[str, str] = {}
    failures = []
    for claim in claims:
        failures += _check_claim(claim, events, sides, support, texts)
    return failures


def _check_claim(
    claim: Claim,
    events: dict[str, Event],
    sides: dict[str, str],
    support: set[tuple[str, Canonical]],
    texts: dict[str, str],
) -> list[GateFailure]:
    failures = []
    if not claim.derived_from:
        failures.append(GateFailure(UNSUPPORTED_CLAIM, claim.key, "derivedFrom is empty"))
    known = [d for d in claim.derived_from if d in events]
    for source in claim.derived_from:
        if source not in events:
            failures.append(
                GateFailure(UNKNOWN_SOURCE, claim.key, f"{source} is not in the selection")
            )
    if claim.kind != CONFLICT_KIND:
        for source in claim.derived_from:
            if source in sides:
                detail = f"states {source}, a side of unresolved conflict {sides[source]}, as fact"
                failures.append(GateFailure(CONFLICT_ASSERTED, claim.key, detail))
                break
    if known and not _supported(claim, known, events, support, texts):
        detail = f"{claim.value!r} {claim.unit or ''} is in none of {', '.join(known)}".strip()
        failures.append(GateFailure(UNSUPPORTED_CLAIM, claim.key, detail))
    return failures


def _support(events: Iterable[Event], items: Sequence[Item]) -> set[tuple[str, Canonical]]:
    """(event id, canonical value) of every item and explicit fact: what each event says."""
    support = {(item.source, canonical(item.value, item.unit)) for item in items}
    for event in events:
        for fact in event.facts:
            support.add((event.id, canonical(fact.value, fact.unit)))
    return support


def _supported(
    claim: Claim,
    sources: Sequence[str],
    events: dict[str, Event],
    support: set[tuple[str, Canonical]],
    texts: dict[str, str],
) -> bool:
    canon = canonical(claim.value, claim.unit)
    if any((source, canon) in support for source in sources):
        return True
    if not isinstance(claim.value, str) or claim.unit:
        return False
    # a verbatim phrase of the event's text supports a string claim
    needle = normalize_text(claim.value)
    if not needle:
        return False
    for source in sources:
        if source not in texts:
            texts[source] = normalize_text(events[source].text)
        if needle in texts[source]:
            return True
    return False


# ---------------------------------------------------------------------------
# open items, cold ids, summary


def _check_open_items(
    expected: Sequence[str], output: Output, events: dict[str, Event]
) -> list[GateFailure]:
    kept = set(output.open_items)
    failures = [
        GateFailure(OPEN_ITEM_DROPPED, event_id, "expected open item is not in openItems")
        for event_id in expected
        if event_id not in kept
    ]
    for field_name, ids in (("openItems", output.open_items), ("cold", output.cold)):
        for event_id in ids:
            if event_id not in events:
                failures.append(
                    GateFailure(
                        UNKNOWN_SOURCE,
                        event_id,
                        f"{field_name} names an event outside the selection",
                    )
                )
    return failures


def _check_summary(output: Output) -> list[GateFailure]:
    found = text_values(output.summary)
    if not found:
        return []
    carried = carried_values(output.claims, deep=False)
    if any(canonical(v, u) not in carried for v, u, _ in found):
        carried = carried_values(output.claims)  # only then read numbers inside claim texts
    return [
        GateFailure(SUMMARY_UNSUPPORTED_NUMBER, surface, "no claim carries this value")
        for value, unit, surface in found
        if canonical(value, unit) not in carried
    ]


def carried_values(claims: Sequence[Claim], *, deep: bool = True) -> set[Canonical]:
    """Every canonical value a summary may mention: the claims' values and their parts.

    ``deep`` also reads the numbers and dates inside string values ('under 200 ms').
    """
    carried: set[Canonical] = set()
    for claim in claims:
        carried.add(canonical(claim.value, claim.unit))
        value = claim.value
        if isinstance(value, int | float) and not isinstance(value, bool):
            carried.add(("number", format_magnitude(float(value))))
        elif isinstance(value, str):
            if deep:
                for part, unit, _ in text_values(value):
                    carried.add(canonical(part, unit))
            carried.update(_date_parts(value))
    return carried


def _date_parts(value: str) -> list[Canonical]:
    """A date-time claim carries its date, its time and its year for the summary to cite."""
    parts: list[Canonical] = []
    day, sep, clock = value.partition("T")
    if sep and len(day) == 10:
        parts += [canonical(day, None), canonical(clock, None)]
    if len(day) >= 4 and day[:4].isdigit():
        parts.append(("number", format_magnitude(float(day[:4]))))
        if len(day) == 10:
            parts.append(canonical(f"--{day[5:]}", None))
    return parts
