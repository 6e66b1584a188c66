"""Step 6: the fidelity gate (DESIGN.md, "The fidelity gate"; docs/gate.md).

Every check is a dict or set lookup per item, claim or id: the gate is linear
in the size of its input. Each failure carries a stable code from
:data:`CODES` and names the offending item id, claim key, conflict id or
event id.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from memlineage.consolidation.coverage import EVENT_DROPPED, STATEMENT_MISSING, check_coverage
from memlineage.consolidation.currency import UPDATED_SHOWN_AS_CURRENT, check_updates
from memlineage.consolidation.parts import event_parts, shown_text
from memlineage.consolidation.render import at_instant, shown_date
from memlineage.consolidation.unit_checks import (
    EVENT_PARTS_INCOMPLETE,
    STATEMENT_EVENTS_MERGED,
    STATEMENT_PART_UNMARKED,
    check_event_units,
    quote,
)
from memlineage.consolidation.wording import (
    CODES as WORDING_CODES,
)
from memlineage.consolidation.wording import (
    EXTRACTIVE,
    check_claim_texts,
    check_statements,
)
from memlineage.meaning import caches
from memlineage.meaning.binding import binding_reasons, shown_kind
from memlineage.meaning.extract import ITEM_CACHE_SIZE, event_items, text_values
from memlineage.meaning.updates import find_updates
from memlineage.meaning.values import (
    Canonical,
    canonical,
    format_magnitude,
    normalize_text,
    unit_identity,
)
from memlineage.model import (
    EVENT_KINDS,
    Claim,
    Conflict,
    Event,
    FactValue,
    GateFailure,
    GateReport,
    Item,
    Output,
    Statement,
)

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
STATEMENT_UNSUPPORTED = "statement_unsupported"
STATEMENT_VALUE_UNSUPPORTED = "statement_value_unsupported"
STATEMENT_AT_UNSUPPORTED = "statement_at_unsupported"
STATEMENT_PROJECT_UNSUPPORTED = "statement_project_unsupported"
STATEMENT_KIND_UNSUPPORTED = "statement_kind_unsupported"

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
    EVENT_DROPPED,
    STATEMENT_MISSING,
    STATEMENT_UNSUPPORTED,
    STATEMENT_VALUE_UNSUPPORTED,
    STATEMENT_AT_UNSUPPORTED,
    STATEMENT_PROJECT_UNSUPPORTED,
    STATEMENT_KIND_UNSUPPORTED,
    STATEMENT_PART_UNMARKED,
    STATEMENT_EVENTS_MERGED,
    EVENT_PARTS_INCOMPLETE,
    *WORDING_CODES,
    UPDATED_SHOWN_AS_CURRENT,
)

#: the item kinds whose values a statement may only name when a claim carries them
_STATEMENT_VALUE_KINDS = frozenset({"number", "money", "date", "id", "scope"})

#: the claim kind that marks a statement as contested rather than asserted
CONFLICT_KIND = "conflict"


@dataclass
class _ClaimIndex:
    """The output's claims, keyed for constant-time lookups by item."""

    by_key: dict[str, list[tuple[Claim, Canonical]]] = field(default_factory=dict)
    values: set[tuple[str, Canonical]] = field(default_factory=set)
    # (key, value, polarity) -> the events the claims saying it derive from
    covered: dict[tuple[str, Canonical, bool], set[str]] = field(default_factory=dict)
    # (key, a, b) for every conflict-kind claim naming both sides
    conflict_pairs: set[tuple[str, str, str]] = field(default_factory=set)

    @staticmethod
    def build(claims: Iterable[Claim]) -> _ClaimIndex:
        index = _ClaimIndex()
        for claim in claims:
            canon = canonical(claim.value, claim.unit)
            index.by_key.setdefault(claim.key, []).append((claim, canon))
            index.values.add((claim.key, canon))
            sources = index.covered.setdefault((claim.key, canon, claim.polarity), set())
            sources.update(claim.derived_from)  # one C-level update: derivations are many
        return index


def check(
    items: Sequence[Item],
    conflicts: Sequence[Conflict],
    open_items: Sequence[str],
    output: Output,
    selection: Sequence[Event],
    *,
    wording: str = EXTRACTIVE,
) -> GateReport:
    """Check an output against the must-preserve set of its selection.

    ``wording``: how a statement's words are judged (consolidation/wording.py).
    """
    unresolved = [c for c in conflicts if not c.resolved]
    index = _ClaimIndex.build(output.claims)
    events = {e.id: e for e in selection}
    failures: list[GateFailure] = []
    failures += _check_items(items, index, {c.id: c for c in unresolved})
    failures += _check_conflict_set(unresolved, output.unresolved_conflicts)
    failures += _check_claims(output.claims, events, items, unresolved)
    failures += _check_open_items(open_items, output, events)
    carried = _Carried(output.claims, items)
    failures += _check_statements(output, events, unresolved, carried)
    failures += check_event_units(output, events)
    failures += check_statements(output.statements, events, wording)
    failures += check_claim_texts(output.claims, events)
    updates = find_updates(selection)
    failures += check_updates(output, selection, updates)
    failures += check_coverage(carried, unresolved, open_items, output, selection, updates)
    failures += _check_statement_fields(output, events, carried, open_items)
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
    sources = index.covered.get((key, canon, item.polarity))
    if sources is not None and item.source in sources:
        return None
    if sources is not None:
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
    reading: Iterable[Event] | None = None,
) -> list[GateFailure]:
    """``reading``: the events whose items and facts are read for support, when the
    claims derive from only these (gate_delta); by default every event."""
    sides: dict[str, str] = {}
    for conflict in unresolved:
        sides.setdefault(conflict.a, conflict.id)
        sides.setdefault(conflict.b, conflict.id)
    support = _support(events.values() if reading is None else reading, items)
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
# open items, cold ids


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


# ---------------------------------------------------------------------------
# statements: lineage, contested marks, values


def _check_statements(
    output: Output, events: dict[str, Event], unresolved: Sequence[Conflict], carried: _Carried
) -> list[GateFailure]:
    sides: dict[str, set[str]] = {}
    for conflict in unresolved:
        sides.setdefault(conflict.a, set()).add(conflict.id)
        sides.setdefault(conflict.b, set()).add(conflict.id)
    claim_keys = carried.keys
    failures: list[GateFailure] = []
    for index, statement in enumerate(output.statements):
        name = f"statements[{index}]"
        failures += _check_statement_lineage(name, statement, events, claim_keys)
        failures += _check_statement_contested(name, statement, sides)
        failures += _check_statement_values(name, statement, carried, events)
    return failures


def _check_statement_lineage(
    name: str, statement: Statement, events: dict[str, Event], claim_keys: Collection[str]
) -> list[GateFailure]:
    failures = []
    if not statement.derived_from:
        failures.append(
            GateFailure(STATEMENT_UNSUPPORTED, name, f"{quote(statement.text)} cites no event")
        )
    # a statement may cite thousands of events: one C-level pass finds the unknown ones
    unknown = set(statement.derived_from).difference(events)
    for source in statement.derived_from if unknown else ():
        if source in unknown:
            detail = f"{quote(statement.text)} cites {source}, outside the selection"
            failures.append(GateFailure(STATEMENT_UNSUPPORTED, name, detail))
    for key in statement.claims:
        if key not in claim_keys:
            detail = f"{quote(statement.text)} states claim {key}, which the output lacks"
            failures.append(GateFailure(STATEMENT_UNSUPPORTED, name, detail))
    return failures


def _check_statement_contested(
    name: str, statement: Statement, sides: dict[str, set[str]]
) -> list[GateFailure]:
    """A statement citing a side of an unresolved conflict carries that conflict's id."""
    conflicts: set[str] = set()
    for source in statement.derived_from:
        conflicts |= sides.get(source, set())
    if conflicts and statement.contested not in conflicts:
        detail = (
            f"{quote(statement.text)} cites a side of unresolved conflict"
            f" {', '.join(sorted(conflicts))} but is marked contested={statement.contested!r}"
        )
        return [GateFailure(CONFLICT_ASSERTED, name, detail)]
    if statement.contested is not None and statement.contested not in conflicts:
        detail = (
            f"{quote(statement.text)} is marked contested by {statement.contested},"
            " which is no unresolved conflict of its sources"
        )
        return [GateFailure(STATEMENT_UNSUPPORTED, name, detail)]
    return []


class _Carried:
    """Per event id, the values carried by the claims deriving from it.

    The numbers inside claims' string values ('under 200 ms') are read only
    for an event a statement needs them from, so each claim is read at most twice.
    """

    def __init__(
        self,
        claims: Sequence[Claim],
        items: Sequence[Item],
        *,
        keys: Collection[str] | None = None,
    ) -> None:
        """``keys``: every claim key of the output, when ``claims`` are only some of its
        claims (gate_delta: those of the events it checks)."""
        self.items: dict[str, list[Item]] = {}  # event id -> its items (no conflicts)
        self.claims: dict[str, list[Claim]] = {}
        # per event: the canonical values of its items a statement may name
        self.item_values: dict[str, list[Canonical]] = {}
        self.verified: dict[str, bool] = {}  # per event: every such value is carried
        self.sentences: dict[str, frozenset[str]] = {}  # per event: its numbered parts
        self.shallow: dict[str, set[Canonical]] = {}
        self.deep: dict[str, set[Canonical]] = {}
        self._reasons: dict[str, tuple[str, ...]] = {}  # per event: why it binds
        # tens of thousands per run: no empty list or set built per claim (as setdefault does)
        by_source, shallow = self.claims, self.shallow
        for claim in claims:
            values = _claim_carries(claim, deep=False)
            for source in claim.derived_from:
                if source in by_source:
                    by_source[source].append(claim)
                    shallow[source].update(values)
                else:
                    by_source[source], shallow[source] = [claim], set(values)
        self.keys: Collection[str] = {claim.key for claim in claims} if keys is None else keys
        self.cited: set[str] = set(by_source)  # every event a claim derives from
        items_of, item_values = self.items, self.item_values
        for item in items:
            if item.kind == CONFLICT_KIND:
                continue
            if item.source in items_of:
                items_of[item.source].append(item)
            else:
                items_of[item.source], item_values[item.source] = [item], []
            if item.kind in _STATEMENT_VALUE_KINDS:
                item_values[item.source].append(canonical(item.value, item.unit))

    def binding(self, event: Event, open_items: set[str]) -> tuple[str, ...]:
        """Why ``event`` binds, conflict sides aside (those the caller knows): computed once
        per event, though both the coverage and the statements' kinds ask."""
        found = self._reasons.get(event.id)
        if found is None:
            own = self.items.get(event.id, [])
            found = self._reasons[event.id] = binding_reasons(event, own, open_items=open_items)
        return found

    def says_whole(self, event: Event, statement: Statement) -> bool:
        """The statement shows the event's whole text (or its marked part) exactly, and
        every value of the event is carried.

        Then the text names no value beyond the event's own items, which the
        claims carry: it needs no extraction of its own.
        """
        if statement.part is None:
            if statement.text != shown_text(event.text):
                return False
        elif statement.text not in self.parts(event):
            return False
        if event.id not in self.verified:
            values = self.item_values.get(event.id, [])
            self.verified[event.id] = all(self.carries(event.id, v) for v in values)
        return self.verified[event.id]

    def parts(self, event: Event) -> frozenset[str]:
        if event.id not in self.sentences:
            self.sentences[event.id] = frozenset(event_parts(event.text))
        return self.sentences[event.id]

    def carries(self, source: str, canon: Canonical) -> bool:
        if canon in self.shallow.get(source, ()):
            return True
        if source not in self.deep:
            self.deep[source] = set()
            for claim in self.claims.get(source, ()):
                self.deep[source].update(_claim_carries(claim))
        return canon in self.deep[source]


def _check_statement_values(
    name: str, statement: Statement, carried: _Carried, events: dict[str, Event]
) -> list[GateFailure]:
    """Every number, amount, date, id or scope of the text is carried by a claim of its sources."""
    anchor = next((events[s] for s in statement.derived_from if s in events), None)
    if anchor is not None and carried.says_whole(anchor, statement):
        return []
    failures = []
    for canon, surface in statement_values(statement.text, anchor):
        if not any(carried.carries(source, canon) for source in statement.derived_from):
            detail = (
                f"{surface!r} in {quote(statement.text)}: no claim derived from"
                f" {', '.join(statement.derived_from) or 'its sources'} carries it"
            )
            failures.append(GateFailure(STATEMENT_VALUE_UNSUPPORTED, name, detail))
    return failures


def statement_values(text: str, source: Event | None = None) -> list[tuple[Canonical, str]]:
    """(canonical value, shown value) of each number, amount, date, id and scope a text names.

    The text is read as the extractor reads its source: relative dates resolve
    against the ``at`` of the statement's first cited event (none: not read).
    """
    at = source.at if source else None
    recorded = source.recorded_at if source else ""
    probe = Event(id="statement", subject="statement", text=text, at=at, recorded_at=recorded)
    return [
        (canonical(item.value, item.unit), f"{item.value} {item.unit or ''}".strip())
        for item in event_items(probe)
        if item.kind in _STATEMENT_VALUE_KINDS
    ]


# ---------------------------------------------------------------------------
# the fields a reader sees beside a statement's text: its date, project and kind


def _check_statement_fields(
    output: Output, events: dict[str, Event], carried: _Carried, open_items: Sequence[str]
) -> list[GateFailure]:
    """A statement's ``at``, ``project`` and ``kind`` are those of the events it cites.

    Recall orders and groups by them: a moved date puts an old preference above
    its reversal, an invented project or a stronger kind says what no event says.
    """
    kinds: dict[str, set[str]] = {}  # per event: the kinds its items support
    for source, own in carried.items.items():
        kinds[source] = {"fact", *(item.kind for item in own)}
    opened = set(open_items)
    for event in events.values():  # and the kind its binding reasons show it under
        shown = shown_kind(carried.binding(event, opened))
        if shown is not None:
            kinds.setdefault(event.id, set()).add(shown)
    failures: list[GateFailure] = []
    for index, statement in enumerate(output.statements):
        cited = [events[s] for s in dict.fromkeys(statement.derived_from) if s in events]
        if not cited:
            continue  # its lineage already fails; there is nothing to compare with
        name = f"statements[{index}]"
        failures += _check_statement_at(name, statement, cited)
        failures += _check_statement_project(name, statement, cited)
        failures += _check_statement_kind(name, statement, cited, kinds, opened)
    return failures


def _event_time(event: Event) -> str | None:
    """The time a statement of this event shows: when it happened, else when it was recorded."""
    return event.at or event.recorded_at or None


def _check_statement_at(name: str, statement: Statement, cited: list[Event]) -> list[GateFailure]:
    """``at`` is the time of a cited event, or within the span of its events' times.

    Null only when no cited event says when it happened (its recording time is
    not shown to a model).
    """
    times = [t for t in (_event_time(e) for e in cited) if t is not None]
    instants = [i for i in (at_instant(t) for t in times) if i is not None]
    if statement.at is None:
        dated = [e.at for e in cited if e.at]
        if not dated:
            return []
        detail = f"{quote(statement.text)} is undated but its events are dated {dated[0]!r}"
        return [GateFailure(STATEMENT_AT_UNSUPPORTED, name, detail)]
    if statement.at in times:
        return []
    instant = at_instant(statement.at)
    # the date a reader sees must lie between its events' dates too (offsets move it)
    days = sorted(d for d in (shown_date(t) for t in times) if d is not None)
    shown = shown_date(statement.at)
    within = (
        instant is not None
        and bool(instants)
        and min(instants) <= instant <= max(instants)
        and shown is not None
        and days[0] <= shown <= days[-1]
    )
    if within:
        return []
    span = times[0] if len(set(times)) == 1 else f"{min(days)}..{max(days)}" if days else "none"
    detail = f"{quote(statement.text)} is dated {statement.at!r}; its events: {span}"
    return [GateFailure(STATEMENT_AT_UNSUPPORTED, name, detail)]


def _check_statement_project(
    name: str, statement: Statement, cited: list[Event]
) -> list[GateFailure]:
    """``project`` is one its cited events carry (null: one of them is global)."""
    projects = {e.project or None for e in cited}
    if (statement.project or None) in projects:
        return []
    carried = ", ".join(sorted(repr(p) for p in projects))
    detail = f"{quote(statement.text)} is under project {statement.project!r}; events: {carried}"
    return [GateFailure(STATEMENT_PROJECT_UNSUPPORTED, name, detail)]


def _check_statement_kind(
    name: str,
    statement: Statement,
    cited: list[Event],
    kinds: dict[str, set[str]],
    opened: set[str],
) -> list[GateFailure]:
    """``kind`` is null, a cited event's kind, or a kind its items (or an open item) support.

    An event with items may be shown as a fact, one with no kind of its own as an
    observation; a constraint, decision, preference or task needs its event to say so.
    """
    if statement.kind is None:
        return []
    supported: set[str] = set()
    for event in cited:
        supported |= kinds.get(event.id, set())
        if event.kind:
            supported.add(event.kind)
        else:
            supported.add("observation")
        if event.id in opened:
            supported.add("task")
        if event.facts:
            supported.add("fact")
    if statement.kind in supported and statement.kind in EVENT_KINDS:
        return []
    detail = (
        f"{quote(statement.text)} is of kind {statement.kind!r}; its events support"
        f" {', '.join(sorted(supported)) or 'none'}"
    )
    return [GateFailure(STATEMENT_KIND_UNSUPPORTED, name, detail)]


def carried_values(claims: Sequence[Claim], *, deep: bool = True) -> set[Canonical]:
    """Every canonical value a summary may mention: the claims' values and their parts.

    ``deep`` also reads the numbers and dates inside string values ('under 200 ms').
    """
    carried: set[Canonical] = set()
    for claim in claims:
        carried.update(_claim_carries(claim, deep=deep))
    return carried


def _claim_carries(claim: Claim, *, deep: bool = True) -> frozenset[Canonical]:
    return _value_carries(claim.value, claim.unit, deep)


@functools.lru_cache(maxsize=ITEM_CACHE_SIZE, typed=True)
def _value_carries(value: FactValue, unit: str | None, deep: bool) -> frozenset[Canonical]:
    """A pure function of the claim's value and unit (typed: True and 1 stay apart),
    remembered per process: a warm run meets last run's claims again."""
    carried = {canonical(value, unit)}
    if isinstance(value, int | float) and not isinstance(value, bool):
        carried.add(("number", format_magnitude(float(value))))
    elif isinstance(value, str):
        if deep:
            for part, part_unit, _ in text_values(value):
                carried.add(canonical(part, part_unit))
        carried.update(_date_parts(value))
    return frozenset(carried)


caches.register(_value_carries.cache_clear)


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
