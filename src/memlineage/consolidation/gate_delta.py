"""Step 6 on a delta: the gate's verdict, checking only what changed since a base. Pure.

A run on the published summary hands the gate an output most of which is its
base's, over the base's events plus a tail. ``gate.check`` judges every claim,
statement and event again; each of its checks of a *carried* element (a claim
with the same content and no fewer sources, a statement equal to one of the
base's, an event in the same place) reads only what cannot have changed since
the base passed: events never change, the claims of an event only grow, and the
unresolved conflicts, the events' items and their open marks are required to be
the base's (otherwise there is no delta). So only what changed is checked:
claims added or grown, statements added, events that moved and the tail
(docs/gate.md, "On a delta"; docs/benchmarks.md, "What the gate on a delta must
check").

Only a base this process judged is trusted: the output object that passed, with
what it was judged against. Another process, another version of the gate or a
row edited behind the store's back never serves as a base. Whenever the delta
does not fit (a base claim removed or narrowed, another conflict, a failure),
``gate.check`` runs whole, so a failing output always gets the full report.
"""

from __future__ import annotations

import functools
import operator
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

import numpy as np

from memlineage.consolidation import coverage, gate
from memlineage.consolidation import wording as wording_checks
from memlineage.consolidation.currency import check_updates
from memlineage.consolidation.unit_checks import check_event_units
from memlineage.consolidation.wording import EXTRACTIVE
from memlineage.meaning import caches
from memlineage.meaning.extract import conflict_items_start
from memlineage.meaning.updates import UpdateIndex, may_update
from memlineage.model import (
    Claim,
    Conflict,
    Event,
    GateFailure,
    GateReport,
    Item,
    Output,
    Statement,
)
from memlineage.store import deltas

#: a claim's content without its sources; the value's type keeps True and 1 apart
ClaimIdentity = tuple[str, type, object, str | None, bool, str, str]
ConflictIdentity = tuple[str, str, str, str | None]
T = TypeVar("T")
Cited = TypeVar("Cited", Claim, Statement)

#: judged outputs remembered per process, counted in the events they were judged
#: over: a worker's recent subjects, bounded like the item caches
JUDGED_EVENTS = 1 << 18


def claim_identity(claim: Claim) -> ClaimIdentity:
    value = claim.value
    return (claim.key, type(value), value, claim.unit, claim.polarity, claim.kind, claim.text)


@dataclass(eq=False)
class Judged:
    """An output that passed the gate in this process, and what it was judged over.

    Its lookups are built when it first serves as a base; its child's are made
    from them and the delta, so a run reads the subject's size only in C-level
    copies and comparisons.
    """

    output: Output
    selection: Sequence[Event]
    event_ids: list[str]
    event_hashes: list[str]
    event_items: list[Item]  # the items of its events, in order (conflict items after)
    unresolved: frozenset[ConflictIdentity]
    open_items: frozenset[str]
    wording: str = EXTRACTIVE  # what its statements were judged by (consolidation/wording.py)

    @functools.cached_property
    def updates(self) -> UpdateIndex:
        """Which of its events later ones update (meaning/updates.py); a child extends it."""
        index = UpdateIndex()
        index.extend(self.selection)
        return index

    @functools.cached_property
    def events(self) -> dict[str, Event]:
        return {e.id: e for e in self.selection}

    @functools.cached_property
    def claims(self) -> dict[ClaimIdentity, Claim] | None:
        """Each claim by its identity; None when two share one (no delta then)."""
        found = {claim_identity(c): c for c in self.output.claims}
        return found if len(found) == len(self.output.claims) else None

    @functools.cached_property
    def claim_positions(self) -> dict[int, int]:
        """Where each claim object is (the record holds the output, so the ids stay its
        claims'): a child carrying the very object is found without its identity."""
        return _positions_of(self.output.claims)

    @functools.cached_property
    def statement_positions(self) -> dict[int, int]:
        return _positions_of(self.output.statements)

    @functools.cached_property
    def claims_by_key(self) -> dict[str, list[Claim]]:
        """Claims by key; a child's also holds the base's claims it grew (read it through
        ``claim_positions``, which names only its own)."""
        found: dict[str, list[Claim]] = {}
        for claim in self.output.claims:
            found.setdefault(claim.key, []).append(claim)
        return found

    @property
    def keys(self) -> Collection[str]:
        return self.claims_by_key.keys()

    @functools.cached_property
    def claims_by_source(self) -> dict[str, list[Claim]]:
        return _by_source(self.output.claims)

    @functools.cached_property
    def items_by_source(self) -> dict[str, list[Item]]:
        found: dict[str, list[Item]] = {}
        for item in self.event_items:
            found.setdefault(item.source, []).append(item)
        return found

    @functools.cached_property
    def statements(self) -> frozenset[Statement]:
        return frozenset(self.output.statements)

    @functools.cached_property
    def statements_by_source(self) -> dict[str, list[Statement]]:
        return _by_source(self.output.statements)

    @functools.cached_property
    def stated(self) -> frozenset[str]:
        stated: set[str] = set()
        for statement in self.output.statements:
            stated.update(statement.derived_from)
        return frozenset(stated)

    @functools.cached_property
    def cold(self) -> frozenset[str]:
        return frozenset(self.output.cold)


def _by_source(entries: Iterable[Cited]) -> dict[str, list[Cited]]:
    """Claims or statements by each event they derive from."""
    found: dict[str, list[Cited]] = {}
    for entry in entries:
        for source in entry.derived_from:
            found.setdefault(source, []).append(entry)
    return found


def _positions_of(entries: Sequence[object]) -> dict[int, int]:
    return dict(zip(map(id, entries), range(len(entries)), strict=True))


_judged: OrderedDict[int, Judged] = OrderedDict()
_judged_lock = threading.Lock()  # a server may consolidate on several threads


def check(
    items: Sequence[Item],
    conflicts: Sequence[Conflict],
    open_items: Sequence[str],
    output: Output,
    selection: Sequence[Event],
    base: Output | None,
    *,
    wording: str = EXTRACTIVE,
) -> GateReport:
    """``gate.check``'s report; on a delta of a ``base`` judged here, only the delta is read."""
    judged = _on_base(base, items, conflicts, open_items, output, selection, wording)
    if judged is not None:
        _remember(judged, replacing=base)
        return GateReport(passed=True, failures=(), checked_items=len(items))
    report = gate.check(items, conflicts, open_items, output, selection, wording=wording)
    if report.passed:
        _remember(_judged_whole(items, conflicts, open_items, output, selection, wording))
    return report


def _remember(judged: Judged, replacing: Output | None = None) -> None:
    """Keep ``judged``; a child replaces its base: the next run builds on the child (and
    one that builds on the base again is judged whole), so a subject holds one record."""
    key = id(judged.output)  # the record holds the output, so the id stays its own
    with _judged_lock:
        if replacing is not None:
            _judged.pop(id(replacing), None)
        _judged[key] = judged
        _judged.move_to_end(key)
        total = sum(len(j.event_ids) for j in _judged.values())
        while len(_judged) > 1 and total > JUDGED_EVENTS:
            _, dropped = _judged.popitem(last=False)
            total -= len(dropped.event_ids)


def forget_judged() -> None:
    """What a new process starts with: every base is judged whole again."""
    with _judged_lock:
        _judged.clear()


caches.register(forget_judged)


def _judged_whole(
    items: Sequence[Item],
    conflicts: Sequence[Conflict],
    open_items: Sequence[str],
    output: Output,
    selection: Sequence[Event],
    wording: str,
) -> Judged:
    return Judged(
        output,
        selection,
        [e.id for e in selection],
        [e.hash for e in selection],
        list(items[: conflict_items_start(items, conflicts)]),
        _unresolved(conflicts).identities,
        frozenset(open_items),
        wording,
    )


@dataclass(frozen=True)
class _Unresolved:
    """What the gate on a delta reads of the unresolved conflicts."""

    conflicts: tuple[Conflict, ...]
    identities: frozenset[ConflictIdentity]
    by_side: dict[str, list[int]]  # event id -> positions of the conflicts it is a side of

    def touching(self, events: Iterable[str]) -> list[Conflict]:
        """The conflicts with a side among ``events``, in order."""
        found = {at for e in events for at in self.by_side.get(e, ())}
        return [self.conflicts[at] for at in sorted(found)]


def _unresolved_of(conflicts: Sequence[Conflict]) -> _Unresolved:
    unresolved = tuple(c for c in conflicts if not c.resolved)
    by_side: dict[str, list[int]] = {}
    for at, conflict in enumerate(unresolved):
        by_side.setdefault(conflict.a, []).append(at)
        if conflict.b != conflict.a:
            by_side.setdefault(conflict.b, []).append(at)
    identities = frozenset((c.id, c.a, c.b, c.key) for c in unresolved)
    return _Unresolved(unresolved, identities, by_side)


def _unresolved_extended(known: _Unresolved, more: Sequence[Conflict]) -> _Unresolved:
    """``_unresolved_of`` the conflicts ``known`` was made of and ``more``."""
    added, offset = _unresolved_of(more), len(known.conflicts)
    moved = ((e, at + offset) for e, ats in added.by_side.items() for at in ats)
    return _Unresolved(
        known.conflicts + added.conflicts,
        known.identities | added.identities,
        _added(known.by_side, moved),
    )


#: found by identity: after a quiet tail a run is handed the last run's very conflicts,
#: after conflicts among the tail the same ones and the tail's
_unresolved = caches.ByIdentity(_unresolved_of, _unresolved_extended)


def _items_of_conflicts(items: Sequence[Item], conflict_ids: set[str]) -> list[Item]:
    """The conflict items of ``conflict_ids`` among ``items`` (none read when there are
    none: a subject may hold tens of thousands of conflicts, each with its item)."""
    if not conflict_ids:
        return []
    return [item for item in items if str(item.value) in conflict_ids]


def _marks_only_new(judged: Judged, unresolved: frozenset[ConflictIdentity]) -> bool:
    """Whether the base's events stand in the same conflicts as when it was judged: each of
    its conflicts still stands, and each new one has both sides among the tail's events."""
    if unresolved is judged.unresolved:
        return True
    if not judged.unresolved <= unresolved:
        return False
    events = judged.events
    return all(a not in events and b not in events for _, a, b, _ in unresolved - judged.unresolved)


# ---------------------------------------------------------------------------
# the delta


@dataclass
class _Delta:
    """What changed from the base, and the child's own record-to-be."""

    tail: list[Event]
    tail_items: list[Item]
    new_conflicts: set[str]  # those the base did not have (both sides in the tail)
    conflict_items: list[Item]  # theirs (the base's were checked on the base)
    open_items: list[str]
    unresolved: _Unresolved
    claims: list[Claim]  # added or grown
    statements: list[Statement]  # not among the base's
    removed: frozenset[Statement]  # the base's, no longer shown
    child: Judged


def _on_base(
    base: Output | None,
    items: Sequence[Item],
    conflicts: Sequence[Conflict],
    open_items: Sequence[str],
    output: Output,
    selection: Sequence[Event],
    wording: str,
) -> Judged | None:
    """The child's record when the output passes on the delta; None: judge it whole."""
    with _judged_lock:
        judged = _judged.get(id(base)) if base is not None else None
    if judged is None or judged.output is not base or judged.wording != wording:
        return None
    delta = _delta(judged, items, conflicts, open_items, output, selection)
    if delta is None or _delta_failures(delta, judged, wording):
        return None
    delta.child.wording = wording
    return delta.child


def _delta(
    judged: Judged,
    items: Sequence[Item],
    conflicts: Sequence[Conflict],
    open_items: Sequence[str],
    output: Output,
    selection: Sequence[Event],
) -> _Delta | None:
    """The delta, or None when the output is no delta of the base (judge it whole)."""
    count = len(judged.event_ids)
    base_events = selection[:count]
    if len(base_events) != count:
        return None
    if not all(map(operator.is_, base_events, judged.selection)):  # else read each one
        if [e.id for e in base_events] != judged.event_ids:
            return None
        if [e.hash for e in base_events] != judged.event_hashes:
            return None
    known = len(judged.event_items)
    unresolved = _unresolved(conflicts)
    identities = unresolved.identities
    if list(items[:known]) != judged.event_items or not _marks_only_new(judged, identities):
        return None
    tail = list(selection[count:])
    opened = frozenset(open_items)
    if opened.difference(e.id for e in tail) != judged.open_items:
        return None  # an old event's open mark changed: its binding may have too
    claims = _changed_claims(judged, output.claims)
    if claims is None:
        return None
    changed, by_identity = claims
    end = conflict_items_start(items, conflicts, known)
    tail_items = list(items[known:end])
    if any(item.kind == gate.CONFLICT_KIND for item in tail_items):
        return None  # not the shape extract_items gives
    child = _child(judged, output, selection, tail, tail_items, opened, changed, by_identity)
    child.unresolved = identities
    statements = _changed_statements(judged, output)
    child.statements, child.stated = statements.shown, statements.stated
    if not statements.removed:  # else built whole when the next run reads it
        child.statements_by_source = _added(
            judged.statements_by_source,
            ((source, s) for s in statements.added for source in s.derived_from),
        )
    new_conflicts = {c[0] for c in identities - judged.unresolved}
    return _Delta(
        tail,
        tail_items,
        new_conflicts,
        _items_of_conflicts(items[end:], new_conflicts),
        list(open_items),
        unresolved,
        changed,
        statements.added,
        statements.removed,
        child,
    )


def _child(
    judged: Judged,
    output: Output,
    selection: Sequence[Event],
    tail: list[Event],
    tail_items: list[Item],
    opened: frozenset[str],
    changed: list[Claim],
    by_identity: dict[ClaimIdentity, Claim],
) -> Judged:
    """The child's record, its lookups made from the base's (C-level copies) and the delta.

    Carried claims stay the base's objects in ``claims_by_source``: they say the same
    from the same sources, which is all a lookup by source reads."""
    child = Judged(
        output,
        selection,
        judged.event_ids + [e.id for e in tail],
        judged.event_hashes + [e.hash for e in tail],
        judged.event_items + tail_items,
        judged.unresolved,
        opened,
    )
    child.claims = by_identity
    events = dict(judged.events)
    events.update((e.id, e) for e in tail)
    child.events = events
    child.claims_by_key = _added(judged.claims_by_key, ((c.key, c) for c in changed))
    child.claims_by_source = _added(
        judged.claims_by_source, ((s, c) for c in changed for s in c.derived_from)
    )
    child.items_by_source = _added(judged.items_by_source, ((i.source, i) for i in tail_items))
    return child


def _added(found: dict[str, list[T]], pairs: Iterable[tuple[str, T]]) -> dict[str, list[T]]:
    """A copy of ``found`` with each value appended under its key, in new lists where it
    adds: the base's lists are never changed."""
    copy = dict(found)
    for key, value in pairs:
        copy[key] = [*copy.get(key, ()), value]
    return copy


def _changed_claims(
    judged: Judged, claims: Sequence[Claim]
) -> tuple[list[Claim], dict[ClaimIdentity, Claim]] | None:
    """The output's claims that are not the base's unchanged, and every claim by identity;
    None when a base claim is removed or narrowed (a statement citing its sources could
    lose its support unseen) or two claims share an identity.

    The base's very objects are found by position, all at once; only the others (the
    tail's claims, grown ones, equal ones parsed again) are read one by one."""
    base = judged.claims
    if base is None:
        return None
    found = deltas.positions(map(id, claims), judged.claim_positions, len(claims))
    counts = np.bincount(found[found >= 0], minlength=len(judged.output.claims))
    if counts.size and int(counts.max()) > 1:
        return None  # one base claim twice
    changed: list[Claim] = []
    others: dict[ClaimIdentity, Claim] = {}
    kept = int(counts.sum())
    for at in np.flatnonzero(found < 0).tolist():
        claim = claims[at]
        identity = claim_identity(claim)
        was = base.get(identity)
        if identity in others or (was is not None and counts[judged.claim_positions[id(was)]]):
            return None  # two claims, one identity
        others[identity] = claim
        if was is None:
            changed.append(claim)
            continue
        kept += 1
        if was.derived_from != claim.derived_from:
            if not set(was.derived_from) <= set(claim.derived_from):
                return None
            changed.append(claim)
    if kept != len(base):
        return None
    every = dict(base)
    every.update(others)
    return changed, every


@dataclass(frozen=True)
class _Statements:
    """The child's statements against the base's."""

    added: list[Statement]  # not among the base's
    removed: frozenset[Statement]  # the base's, no longer shown
    shown: frozenset[Statement]
    stated: frozenset[str]  # the events they cite


def _changed_statements(judged: Judged, output: Output) -> _Statements:
    """Statements added, and the base's no longer shown (compared whole; their order
    matters to no check's verdict: a failure is reported by the whole gate).

    The base's very objects are found by position; only the others are hashed. When a
    base statement is not shown by object, every statement is compared whole."""
    shown, before = output.statements, judged.statements
    found = deltas.positions(map(id, shown), judged.statement_positions, len(shown))
    hits = found[found >= 0]
    if np.unique(hits).size == hits.size == len(before) == len(judged.output.statements):
        others = (shown[at] for at in np.flatnonzero(found < 0).tolist())
        added = list(dict.fromkeys(s for s in others if s not in before))
        stated = judged.stated.union(*(s.derived_from for s in added))
        return _Statements(added, frozenset(), before.union(added), stated)
    every = frozenset(shown)
    added = list(dict.fromkeys(s for s in shown if s not in before))
    stated = frozenset(source for s in every for source in s.derived_from)
    return _Statements(added, before - every, every, stated)


def _delta_failures(delta: _Delta, judged: Judged, wording: str) -> list[GateFailure]:
    """The gate's checks of what changed; any failure sends the output to the whole gate."""
    child = delta.child
    output, events = child.output, child.events
    moved = set((child.stated ^ judged.stated) | (child.cold ^ judged.cold))
    for statement in (*delta.statements, *delta.removed):
        moved.update(statement.derived_from)
    moved.intersection_update(events)
    needed = moved.union(e.id for e in delta.tail)
    for claim in delta.claims:
        needed.update(claim.derived_from)
    needed.intersection_update(events)
    # only conflicts with a side among the events read: every check asks by event
    conflicts = delta.unresolved.touching(needed)
    own_items = [item for source in needed for item in child.items_by_source.get(source, ())]
    own_items += [item for item in delta.conflict_items if item.source in needed]  # support
    claims = {id(c): c for s in needed for c in child.claims_by_source.get(s, ())}
    carried = gate._Carried(list(claims.values()), own_items, keys=child.keys)
    failures = _claim_and_item_failures(delta, events, conflicts, needed, own_items)
    if delta.new_conflicts or output.unresolved_conflicts != judged.output.unresolved_conflicts:
        failures += gate._check_conflict_set(
            delta.unresolved.conflicts, output.unresolved_conflicts
        )
    # a carried cold id names a base event: only the ones added can name another
    added_cold = replace(output, cold=tuple(sorted(child.cold - judged.cold)))
    failures += gate._check_open_items(delta.open_items, added_cold, events)
    if delta.statements:
        changed = replace(output, statements=tuple(delta.statements))
        cited = {s: events[s] for st in delta.statements for s in st.derived_from if s in events}
        failures += gate._check_statements(changed, events, conflicts, carried)
        failures += gate._check_statement_fields(changed, cited, carried, delta.open_items)
        failures += wording_checks.check_statements(delta.statements, events, wording)
    # An update the base did not have needs a tail event that may update; one the base
    # had can only break when a base event moved (stated, cold or re-stated).
    tail_ids = {e.id for e in delta.tail}
    found = judged.updates.updates()  # nothing new can update: the base's hold
    if any(may_update(e.text) for e in delta.tail) or not moved <= tail_ids:
        updates = judged.updates.copy()  # the base's, extended by the tail: not re-read
        updates.extend(delta.tail)
        child.__dict__["updates"] = updates
        found = updates.updates()
        failures += check_updates(output, child.selection, found, child.stated)
    by_source = child.statements_by_source
    touching = dict.fromkeys(s for e in sorted(moved) for s in by_source.get(e, ()))
    failures += check_event_units(replace(output, statements=tuple(touching)), events)
    placed = [events[e] for e in sorted(moved.union(e.id for e in delta.tail))]
    sides = delta.unresolved.by_side
    shown_parts = coverage.parts_shown(st for e in placed for st in by_source.get(e.id, ()))
    failures += coverage.coverage_failures(
        carried, sides, delta.open_items, child.stated, child.cold, placed, found, shown_parts
    )
    return failures


def _claim_and_item_failures(
    delta: _Delta,
    events: dict[str, Event],
    conflicts: Sequence[Conflict],
    needed: set[str],
    own_items: Sequence[Item],
) -> list[GateFailure]:
    """Claims added or grown against what their events say; the tail's items covered."""
    reading = [events[e] for e in needed]  # every source of a changed claim among them
    failures = gate._check_claims(delta.claims, events, own_items, conflicts, reading)
    failures += wording_checks.check_claim_texts(delta.claims, events)
    checked = delta.tail_items + delta.conflict_items
    child = delta.child
    own = child.claim_positions
    keys = sorted({item.key for item in checked})
    found = [c for k in keys for c in child.claims_by_key.get(k, ()) if id(c) in own]
    index = gate._ClaimIndex.build(sorted(found, key=lambda c: own[id(c)]))
    failures += gate._check_items(checked, index, {c.id: c for c in conflicts})
    return failures
