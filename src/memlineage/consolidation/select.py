"""Step 2: which valid events a consolidation selects. Pure: no I/O.

Validity itself is the raw layer's (:mod:`memlineage.raw.validity`); the
consolidator never adjudicates: unresolved conflicts are reported, both sides
stay valid.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memlineage.canonical import (
    RootState,
    extended_input_root,
    input_root,
    input_root_state,
)
from memlineage.meaning import caches
from memlineage.model import Conflict, Event, Manifest, Operation, OpKind
from memlineage.raw.validity import DEFAULT_POLICY, Folded, TrustPolicy, fold_operations

#: v2: incremental. With a fresh published parent, the generator is given the
#: parent's statements and claims plus the events after its coverage; the
#: selection itself (every valid event up to H) and so the must-preserve set,
#: the conflict set and the gate's checks are those of a full rebuild.
SELECTOR_VERSION = "v2"


@dataclass(frozen=True)
class Selection:
    """Step 2: the valid events with seq <= H and the unresolved conflicts among them."""

    events: tuple[Event, ...]
    conflicts: tuple[Conflict, ...]
    high_water: int
    selector_version: str = SELECTOR_VERSION
    # The coverage of the fresh parent whose output is reused (0: none, a full build).
    parent_covers_through: int = 0
    # the subject's selection in this process it was read from (``root_of`` notes on it)
    source: _Selected | None = field(default=None, compare=False, repr=False)
    # the events' ids, kept by ``select`` (a C-level copy of what its source lists)
    event_ids: tuple[str, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def new_events(self) -> tuple[Event, ...]:
        """The selected events after the parent's coverage: what an incremental run reads."""
        start = bisect.bisect_right(self.events, self.parent_covers_through, key=_seq)
        return self.events[start:]

    @property
    def ids(self) -> tuple[str, ...]:
        """The selected events' ids, in order."""
        if self.event_ids is not None:
            return self.event_ids
        return tuple(e.id for e in self.events)


def _seq(event: Event) -> int:
    return event.seq


def select(
    events: Iterable[Event],
    ops: Sequence[Operation],
    high_water: int,
    policy: TrustPolicy = DEFAULT_POLICY,
    parent_covers_through: int = 0,
) -> Selection:
    """Valid events up to ``high_water`` in seq order, with their unresolved conflicts.

    ``parent_covers_through`` is the coverage of a fresh parent, when there is one.
    """
    candidates = [e for e in events if e.seq <= high_water]
    subject = candidates[0].subject if candidates else ""
    last = _last.take(subject)
    if last is None or not last.adopts(candidates, ops, policy):
        folded = fold_operations(ops, policy)
        last = _Selected(ops, policy, folded, [], [], [], set(), set(), _last_op(ops))
    last.add(candidates[len(last.candidates) :])
    _last.keep(subject, last)
    return Selection(
        tuple(last.chosen),
        last.unresolved_among_chosen(),
        high_water,
        parent_covers_through=parent_covers_through,
        source=last,
        event_ids=tuple(last.chosen_ids),
    )


def root_of(selection: Selection) -> str:
    """The manifest's ``inputRoot`` of the selection, noted for ``carries_over``: its events
    are the first ones of every later selection extending it in this process.

    Hashed on from what the last root of the same selection hashed (its chosen events
    only grow): the new pairs are put in place by id, the old ones are not sorted and
    encoded again (``canonical.extended_input_root``)."""
    events, source = selection.events, selection.source
    state = source.root_state if source is not None else None
    found = None
    if state is not None and state.count <= len(events):
        found = extended_input_root(state, ((e.id, e.hash) for e in events[state.count :]))
    root, state = found or input_root_state((e.id, e.hash) for e in events)
    if source is not None:  # replaced whole: a server's threads may read it meanwhile
        source.roots = (*source.roots[1 - ROOTS_KEPT :], (root, len(events)))
        source.root_state = state
    return root


#: roots noted per selection: the last runs' (a parent is the last published one)
ROOTS_KEPT = 4


@dataclass
class _Selected:
    """A subject's last selection. The same events plus a tail, under operations that
    say of the old events what they said (the very same object: a worker's read keeps
    it while none is recorded; or more, which name only events not among the old:
    a conflict among the tail's), judge the old events as before: only the tail's
    are judged."""

    ops: Sequence[Operation]
    policy: TrustPolicy
    folded: Folded
    candidates: list[Event]
    chosen: list[Event]  # the valid ones, in seq order
    chosen_ids: list[str]  # theirs
    ids: set[str]
    candidate_ids: set[str]
    last_op: int  # the largest op_seq among the operations
    top: int = -(2**63)  # the largest seq among the candidates
    roots: tuple[tuple[str, int], ...] = ()  # (input root, chosen events), the last ones
    root_state: RootState | None = None  # what the last root hashed, to hash on from
    # the unresolved conflicts among the chosen, the fold and chosen events they were
    # found for, and that fold's unresolved conflicts by side (built when first reused)
    conflicts: tuple[Conflict, ...] = ()
    conflicts_fold: Folded | None = None
    conflicts_through: int = 0
    by_side: dict[str, list[Conflict]] | None = None

    def adopts(
        self, candidates: list[Event], ops: Sequence[Operation], policy: TrustPolicy
    ) -> bool:
        """Whether this selection extends to ``candidates`` under ``ops`` (taking them on):
        they are its candidates plus a tail after all of them, and the operations leave
        the old candidates as they were."""
        if not self._extends_to(candidates, policy):
            return False
        if ops is self.ops:
            return True
        folded = self._folded_alike(ops)
        if folded is not None:
            self.last_op = max(self.last_op, _last_op(ops[len(self.ops) :]))
            self.ops, self.folded = ops, folded
        return folded is not None

    def _extends_to(self, candidates: list[Event], policy: TrustPolicy) -> bool:
        if policy != self.policy or len(candidates) < len(self.candidates):
            return False
        known = len(self.candidates)
        if candidates[:known] != self.candidates:
            return False
        return all(e.seq > self.top for e in candidates[known:])

    def _folded_alike(self, ops: Sequence[Operation]) -> Folded | None:
        """This selection's fold continued by the operations ``ops`` adds to its own (the
        first ones the very same), when none of them names an old candidate or changes
        the policy: they then say of every old candidate what this selection's fold
        says. None otherwise. It costs the new operations, not the subject's history."""
        known = len(self.ops)
        if len(ops) < known or not all(map(operator.is_, ops[:known], self.ops)):
            return None
        for op in ops[known:]:
            if op.kind is OpKind.POLICY or op.op_seq <= self.last_op:
                return None
            if not self.candidate_ids.isdisjoint(_named(op, self.folded)):
                return None
        return fold_operations(ops[known:], self.policy, after=self.folded)

    def unresolved_among_chosen(self) -> tuple[Conflict, ...]:
        """The fold's unresolved conflicts with both sides chosen, in the fold's order.

        While the fold is the last one's, continued at most by new conflicts (a tail
        with conflicts among its events), and no event chosen since completes an older
        one, they are the last run's and the new ones after them: the very same tuple
        when there are none (a quiet tail). What is derived from it later in the run is
        then found by identity (``caches.ByIdentity``), not rebuilt per conflict."""
        ids, folded, last = self.ids, self.folded, self.conflicts_fold
        added = _conflicts_added(last, folded) if last is not None else None
        if added is not None and last is not None:
            if self.by_side is None:
                self.by_side = _unresolved_by_side(last.unresolved)
            by_side, new = self.by_side, self.chosen[self.conflicts_through :]
            completed = (c for e in new for c in by_side.get(e.id, ()))
            if not any(c.a in ids and c.b in ids for c in completed):
                more = tuple(c for c in added if c.a in ids and c.b in ids)
                if more:
                    self.conflicts += more
                _index_sides(by_side, added)
                self.conflicts_fold, self.conflicts_through = folded, len(self.chosen)
                return self.conflicts
        self.conflicts = tuple(c for c in folded.unresolved if c.a in ids and c.b in ids)
        self.conflicts_fold, self.conflicts_through, self.by_side = folded, len(self.chosen), None
        return self.conflicts

    def add(self, tail: list[Event]) -> None:
        valid = sorted((e for e in tail if self.folded.is_valid(e)), key=lambda e: e.seq)
        self.candidates.extend(tail)
        self.candidate_ids.update(e.id for e in tail)
        self.chosen.extend(valid)
        self.chosen_ids.extend(e.id for e in valid)
        self.ids.update(e.id for e in valid)
        self.top = max((e.seq for e in tail), default=self.top)


def _unresolved_by_side(unresolved: Iterable[Conflict]) -> dict[str, list[Conflict]]:
    found: dict[str, list[Conflict]] = {}
    _index_sides(found, unresolved)
    return found


def _index_sides(by_side: dict[str, list[Conflict]], conflicts: Iterable[Conflict]) -> None:
    for conflict in conflicts:
        by_side.setdefault(conflict.a, []).append(conflict)
        by_side.setdefault(conflict.b, []).append(conflict)


def _conflicts_added(last: Folded, folded: Folded) -> list[Conflict] | None:
    """The unresolved conflicts ``folded`` adds after ``last``'s, when it is ``last``
    continued by new conflicts alone (each of ``last``'s the very same, in its place);
    None otherwise. C-level comparisons: it costs the new conflicts."""
    if folded is last:
        return []
    old, new = last.conflicts, folded.conflicts
    if len(new) < len(old) or not all(map(operator.is_, old.values(), new.values())):
        return None
    return [c for c in itertools.islice(new.values(), len(old), None) if not c.resolved]


def _last_op(ops: Sequence[Operation]) -> int:
    return max((op.op_seq for op in ops), default=0)


def _named(op: Operation, folded: Folded) -> set[str]:
    """The events an operation names: its target and other, and its conflict's sides."""
    named = {op.target} if op.other is None else {op.target, op.other}
    conflict = folded.conflicts.get(op.conflict_id) if op.conflict_id else None
    if conflict is not None:
        named.update((conflict.a, conflict.b))
    return named


# One selection per subject, kept per process (bounded in events, emptied by erasure).
SELECTED_EVENTS = 1 << 18
_last: caches.LastPerKey[str, _Selected] = caches.LastPerKey(
    lambda selected: len(selected.candidates), SELECTED_EVENTS
)
forget_selections = _last.clear


def carries_over(selection: Selection, parent: Manifest) -> bool:
    """Whether what ``parent`` read is still what a rebuild reads of the events it covered.

    The same valid events up to its coverage, with the same hashes, and the same
    unresolved conflicts touching them. Operations since its epoch that changed
    neither (a conflict between new events, or with an event it did not select)
    leave it a sound base for an incremental run; anything else is a full rebuild.
    """
    count = _noted_prefix(selection, parent)
    if count is not None:  # its inputs are the first events: the conflicts are what is left
        tail = {e.id for e in selection.events[count:]}
        touching = sorted(
            c.id for c in selection.conflicts if c.a not in tail or c.b not in tail
        )  # fmt: skip
        return touching == sorted(parent.expected_conflicts)
    covered = [e for e in selection.events if e.seq <= parent.new_covers_through]
    if tuple(e.id for e in covered) != parent.input_ids:
        return False
    ids = set(parent.input_ids)
    touching = sorted(c.id for c in selection.conflicts if c.a in ids or c.b in ids)
    if touching != sorted(parent.expected_conflicts):
        return False
    return input_root((e.id, e.hash) for e in covered) == parent.input_root


def _noted_prefix(selection: Selection, parent: Manifest) -> int | None:
    """How many of the selection's first events ``parent`` read, when ``root_of`` noted
    its root on the selection this one extends (the root fixes every id and hash), and
    exactly those are up to its coverage; None: compare them one by one."""
    source = selection.source
    noted = dict(source.roots) if source is not None else {}
    count = noted.get(parent.input_root)
    if count is None or count != len(parent.input_ids) or count > len(selection.events):
        return None
    events, coverage = selection.events, parent.new_covers_through
    if count and events[count - 1].seq > coverage:
        return None
    if count < len(events) and events[count].seq <= coverage:
        return None
    return count
