"""Which events are valid (I3): the raw layer's rules, folded over its operations. Pure.

The rules decide validity, in this order of reasons: revoked, superseded (by a
replacement), lost a resolved conflict, or quarantined by the trust policy. The
consolidator never adjudicates: unresolved conflicts are reported, both sides
stay valid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from memlineage.model import Conflict, Event, EventState, Operation, OpKind


class Trusted(Protocol):
    """What ``source_state`` reads of an event: its id and its trust (an Event has them)."""

    @property
    def id(self) -> str: ...
    @property
    def trust(self) -> str: ...
    @property
    def taint(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class TrustPolicy:
    """Which events the trust policy quarantines.

    The default quarantines any event that carries a taint label and admits
    every trust level: a taint is someone saying "do not build on this".
    """

    blocked_taints: frozenset[str] | None = None  # None: every label blocks
    admitted_trust: frozenset[str] = frozenset({"user", "agent", "tool", "external"})

    def admits(self, trust: str, taint: Iterable[str]) -> bool:
        if not taint and self.blocked_taints is None:  # most events: no label, default policy
            return trust in self.admitted_trust
        labels = set(taint)
        if self.blocked_taints is None:
            blocked = bool(labels)
        else:
            blocked = bool(labels & self.blocked_taints)
        return not blocked and trust in self.admitted_trust


DEFAULT_POLICY = TrustPolicy()


def policy_from_op(op: Operation) -> TrustPolicy:
    """The trust policy a ``policy`` operation carries (see policy.trust_operation)."""
    admitted = frozenset(op.trust.split(",")) if op.trust else frozenset()
    blocked = None if op.taint is None else frozenset(op.taint)
    return TrustPolicy(blocked_taints=blocked, admitted_trust=admitted)


@dataclass(frozen=True)
class SourceState:
    """The raw layer's verdict on one subject's events."""

    invalid: dict[str, str] = field(default_factory=dict)  # event id -> reason
    conflicts: dict[str, Conflict] = field(default_factory=dict)
    trust: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)

    def is_valid(self, event: Event) -> bool:
        return event.id not in self.invalid

    @property
    def unresolved(self) -> list[Conflict]:
        return [c for c in self.conflicts.values() if not c.resolved]


def source_state(
    events: Iterable[Trusted], ops: Sequence[Operation], policy: TrustPolicy = DEFAULT_POLICY
) -> SourceState:
    """Fold the operations over the events into valid/invalid and the conflict set.

    An event may be invalid for several reasons at once (lost a conflict, then
    revoked); dismissing the conflict lifts only its own reason, so the first
    reason still standing is the one reported.
    """
    return judged(events, fold_operations(ops, policy))


def judged(events: Iterable[Trusted], folded: Folded) -> SourceState:
    """``source_state`` from the subject's operations folded already (a fold kept
    between reads, continued by the new operations: recall/kept.py)."""
    invalid = dict(folded.invalid)
    trust: dict[str, tuple[str, tuple[str, ...]]] = {}
    for event in events:
        trust[event.id] = level_and_taint = folded.trust_of(event)
        if event.id not in invalid and not folded.policy.admits(*level_and_taint):
            invalid[event.id] = "quarantined by trust policy"
    return SourceState(invalid=invalid, conflicts=folded.conflicts, trust=trust)


@dataclass(frozen=True)
class Folded:
    """What a subject's operations say before any event is judged: the reasons that
    stand, the conflicts, the trust overrides and the trust policy the subject holds."""

    invalid: dict[str, str]
    conflicts: dict[str, Conflict]
    overrides: dict[str, tuple[str | None, tuple[str, ...] | None]]
    policy: TrustPolicy
    reasons: dict[str, tuple[str, ...]] = field(default_factory=dict)  # every one, in order

    def trust_of(self, event: Trusted) -> tuple[str, tuple[str, ...]]:
        new_level, new_taint = self.overrides.get(event.id, (None, None))
        return new_level or event.trust, new_taint if new_taint is not None else event.taint

    def is_valid(self, event: Trusted) -> bool:
        """``source_state``'s verdict on one event, as any other events leave it."""
        return event.id not in self.invalid and self.policy.admits(*self.trust_of(event))

    @property
    def unresolved(self) -> list[Conflict]:
        return [c for c in self.conflicts.values() if not c.resolved]


def fold_operations(
    ops: Sequence[Operation], policy: TrustPolicy = DEFAULT_POLICY, after: Folded | None = None
) -> Folded:
    """The operations in order, folded (``source_state`` then judges each event).

    ``after``: the fold of the operations recorded before ``ops``, continued (it is left
    as it is): a fold of the new operations costs them, not the subject's history.
    """
    reasons: dict[str, tuple[str, ...]] = dict(after.reasons) if after else {}
    conflicts: dict[str, Conflict] = dict(after.conflicts) if after else {}
    overrides = dict(after.overrides) if after else {}
    policy = after.policy if after else policy
    touched: set[str] = set()

    def add(event_id: str, reason: str, first: bool = False) -> None:
        now = reasons.get(event_id, ())
        reasons[event_id] = (reason, *now) if first else (*now, reason)
        touched.add(event_id)

    def lift(event_id: str, reason: str) -> None:
        now = reasons.get(event_id, ())
        if reason in now:
            at = now.index(reason)
            reasons[event_id] = now[:at] + now[at + 1 :]
            touched.add(event_id)

    for op in sorted(ops, key=lambda o: o.op_seq):
        if op.kind is OpKind.POLICY:
            policy = policy_from_op(op)  # the tenant's policy as this subject adopted it
        elif op.kind is OpKind.ERASE:
            add(op.target, "erased", first=True)  # nothing restores it
        elif op.kind is OpKind.DISMISS and op.conflict_id in conflicts:
            dismissed = conflicts.pop(op.conflict_id)
            lift(dismissed.a, f"lost conflict {dismissed.id}")
            lift(dismissed.b, f"lost conflict {dismissed.id}")
        elif op.kind is OpKind.REVOKE:
            add(op.target, "revoked")
        elif op.kind is OpKind.REPLACE:
            add(op.target, f"superseded by {op.other}")
        elif op.kind is OpKind.CONFLICT and op.conflict_id and op.other:
            conflicts[op.conflict_id] = Conflict(op.conflict_id, op.target, op.other, op.key)
        elif op.kind is OpKind.RESOLVE and op.conflict_id in conflicts and op.other:
            # A later resolution of the same conflict (a user overturning the temporal
            # policy's) gives the previous loser back its validity.
            declared = conflicts[op.conflict_id]
            lost = f"lost conflict {declared.id}"
            lift(declared.a, lost)
            lift(declared.b, lost)
            conflicts[op.conflict_id] = Conflict(
                declared.id, declared.a, declared.b, declared.key, winner=op.other
            )
            loser = declared.b if op.other == declared.a else declared.a
            add(loser, lost)
        elif op.kind is OpKind.TRUST:
            # A later trust change overrides only what it names.
            level, taint = overrides.get(op.target, (None, None))
            overrides[op.target] = (op.trust or level, op.taint if op.taint is not None else taint)
    invalid = dict(after.invalid) if after else {}
    for event_id in touched if after else reasons:
        why = reasons[event_id]
        if why:
            invalid[event_id] = why[0]
        else:
            invalid.pop(event_id, None)
    return Folded(invalid, conflicts, overrides, policy, reasons)


def event_states(
    events: Iterable[Event], ops: Sequence[Operation], policy: TrustPolicy = DEFAULT_POLICY
) -> list[EventState]:
    """Each event with its state and why, from the same fold as ``source_state``.

    A lost conflict is ``retired`` when the temporal policy resolved it (its
    resolution names the rule), ``lost-conflict`` when someone did; a valid
    event that is a side of an unresolved conflict says so in ``why``.
    """
    events = list(events)
    state = source_state(events, ops, policy)
    last = {
        (op.kind, op.conflict_id or op.target): op for op in sorted(ops, key=lambda o: o.op_seq)
    }
    fields = [f.name for f in dataclasses.fields(Event)]
    found = []
    for event in events:
        verdict, why = _verdict(event.id, state, last)
        copied = {name: getattr(event, name) for name in fields}
        found.append(EventState(**copied, state=verdict, why=why))
    return found


def _verdict(
    event_id: str, state: SourceState, last: dict[tuple[OpKind, str], Operation]
) -> tuple[str, str | None]:
    reason = state.invalid.get(event_id)
    if reason is None:
        open_sides = [c for c in state.unresolved if event_id in (c.a, c.b)]
        contested = [f"{c.id} with {c.b if c.a == event_id else c.a}" for c in open_sides]
        return "valid", (
            "contested: unresolved conflict " + ", ".join(contested)
        ) if contested else None
    if reason.startswith("lost conflict "):
        conflict_id = reason.removeprefix("lost conflict ")
        resolved = last.get((OpKind.RESOLVE, conflict_id))
        winner = state.conflicts[conflict_id].winner if conflict_id in state.conflicts else None
        lost = f"lost conflict {conflict_id} to {winner}"
        if resolved is not None and resolved.reason:  # the temporal policy names its rule
            return "retired", f"retired by the temporal policy: {lost} under {resolved.reason}"
        return "lost-conflict", f"{lost} (resolved by hand)"
    for kind, name in ((OpKind.REVOKE, "revoked"), (OpKind.ERASE, "erased")):
        if reason == name:
            op = last.get((kind, event_id))
            return name, f"{name}: {op.reason}" if op is not None and op.reason else name
    if reason.startswith("superseded"):
        return "superseded", reason
    level, taint = state.trust.get(event_id, ("", ()))
    labels = f", taint {', '.join(taint)}" if taint else ""
    return "quarantined", f"{reason} (trust {level}{labels})"
