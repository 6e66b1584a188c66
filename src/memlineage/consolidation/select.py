"""Step 2: which valid events a consolidation selects. Pure: no I/O.

Validity itself is the raw layer's (:mod:`memlineage.raw.validity`); the
consolidator never adjudicates: unresolved conflicts are reported, both sides
stay valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memlineage.canonical import input_root
from memlineage.meaning import caches
from memlineage.model import Conflict, Event, Manifest, Operation
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

    @property
    def new_events(self) -> tuple[Event, ...]:
        """The selected events after the parent's coverage: what an incremental run reads."""
        return tuple(e for e in self.events if e.seq > self.parent_covers_through)


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
    if last is None or not last.extends_to(candidates, ops, policy):
        last = _Selected(ops, policy, fold_operations(ops, policy), [], [], set())
    last.add(candidates[len(last.candidates) :])
    _last.keep(subject, last)
    ids = last.ids
    conflicts = tuple(c for c in last.folded.unresolved if c.a in ids and c.b in ids)
    chosen = tuple(last.chosen)
    return Selection(chosen, conflicts, high_water, parent_covers_through=parent_covers_through)


@dataclass
class _Selected:
    """A subject's last selection: the same operations (the very object: a worker's
    read keeps it while none is recorded) over the same events plus a tail judge
    the old events as before, so only the tail's are judged."""

    ops: Sequence[Operation]
    policy: TrustPolicy
    folded: Folded
    candidates: list[Event]
    chosen: list[Event]  # the valid ones, in seq order
    ids: set[str]
    top: int = -(2**63)  # the largest seq among the candidates

    def extends_to(
        self, candidates: list[Event], ops: Sequence[Operation], policy: TrustPolicy
    ) -> bool:
        """Whether ``candidates`` are this selection's plus a tail after all of them."""
        if ops is not self.ops or policy != self.policy or len(candidates) < len(self.candidates):
            return False
        known = len(self.candidates)
        if candidates[:known] != self.candidates:
            return False
        return all(e.seq > self.top for e in candidates[known:])

    def add(self, tail: list[Event]) -> None:
        valid = sorted((e for e in tail if self.folded.is_valid(e)), key=lambda e: e.seq)
        self.candidates.extend(tail)
        self.chosen.extend(valid)
        self.ids.update(e.id for e in valid)
        self.top = max((e.seq for e in tail), default=self.top)


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
    covered = [e for e in selection.events if e.seq <= parent.new_covers_through]
    if tuple(e.id for e in covered) != parent.input_ids:
        return False
    ids = set(parent.input_ids)
    touching = sorted(c.id for c in selection.conflicts if c.a in ids or c.b in ids)
    if touching != sorted(parent.expected_conflicts):
        return False
    return input_root((e.id, e.hash) for e in covered) == parent.input_root
