"""Invalidating operations (I1, I3, I7): revoke, trust, conflict, resolve.

Each takes the subject's clock row lock first, bumps the epoch and stales
what derives from a newly invalid event, in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from memlineage.errors import BadInput
from memlineage.model import TRUST_LEVELS, OpKind
from memlineage.raw.ingest import parse_taint
from memlineage.store.core import StoreCore
from memlineage.store.protocol import OpResult


class OperationsMixin(StoreCore):
    def revoke(self, tenant: str, event_id: str, reason: str | None = None) -> OpResult:
        """Undo an event (I1: advances the epoch); what derives from it goes stale at once."""
        subject = self._subject_of(tenant, event_id)
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            assert clock is not None  # the event exists, so its clock does
            state = self._state(tx, tenant, subject, [event_id])
            if state.invalid.get(event_id) == "revoked":
                return OpResult(subject, clock.epoch, changed=False)
            return self._record_invalidation(
                tx, tenant, subject, OpKind.REVOKE, event_id, reason=reason, invalidates=event_id
            )

    def set_trust(
        self, tenant: str, event_id: str, level: str | None, taint: Sequence[str] | None
    ) -> OpResult:
        """Change an event's trust level and/or taint labels (I1: advances the epoch).

        A change that changes nothing (no level and no taint given, the level it
        has, no labels on an event without any) is a no-op: the epoch stays, and
        so does the summary in recall. Blank taint labels are refused, as ``add``
        refuses them.
        """
        labels = parse_taint(list(taint), field="taint") if taint is not None else None
        if labels is not None and not all(label.strip() for label in labels):
            raise BadInput("must be a list of non-empty strings", field="taint")
        if level is not None and level not in TRUST_LEVELS:
            raise BadInput(
                f"must be one of {', '.join(TRUST_LEVELS)}; got {level!r}", field="level"
            )
        subject = self._subject_of(tenant, event_id)
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            assert clock is not None  # the event exists, so its clock does
            before = self._state(tx, tenant, subject, [event_id])
            current_level, current_taint = before.trust[event_id]
            wanted = (level or current_level, labels if labels is not None else current_taint)
            if wanted == (current_level, tuple(sorted(set(current_taint)))):
                return OpResult(subject, clock.epoch, changed=False)
            was_valid = event_id not in before.invalid
            result = self._record_invalidation(
                tx, tenant, subject, OpKind.TRUST, event_id, trust=level, taint=labels
            )
            now_invalid = event_id in self._state(tx, tenant, subject, [event_id]).invalid
            if was_valid and now_invalid:
                stale = self._mark_descendants_stale(
                    tx, tenant, subject, [event_id], f"trust change of {event_id}"
                )
                return OpResult(subject, result.epoch, True, stale=stale)
            return result

    def declare_conflict(self, tenant: str, a: str, b: str, key: str | None = None) -> OpResult:
        """Record that two events of one subject contradict each other (advances the epoch)."""
        if a == b:
            raise BadInput("an event cannot conflict with itself", field="b")
        subject = self._subject_of(tenant, a, field="a")
        if self._subject_of(tenant, b, field="b") != subject:
            raise BadInput("conflicting events must belong to one subject", field="b")
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            assert clock is not None
            for open_conflict in self._state(tx, tenant, subject, [a, b]).unresolved:
                if {open_conflict.a, open_conflict.b} == {a, b}:  # declaring again: a no-op
                    return OpResult(subject, clock.epoch, False, conflict_id=open_conflict.id)
            return self._record_invalidation(
                tx, tenant, subject, OpKind.CONFLICT, a, other=b, key=key
            )

    def resolve_conflict(self, tenant: str, conflict_id: str, winner: str) -> OpResult:
        """Resolve a conflict for ``winner``; the other side becomes invalid (I3)."""
        subject, a, b = self._conflict_sides(tenant, conflict_id)
        if winner not in (a, b):
            raise BadInput(f"winner must be {a!r} or {b!r}", field="winner")
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            assert clock is not None
            conflict = self._state(tx, tenant, subject, [a, b]).conflicts[conflict_id]
            if conflict.resolved:
                if conflict.winner == winner:
                    return OpResult(subject, clock.epoch, changed=False, conflict_id=conflict_id)
                if not self._resolved_by_policy(tx, tenant, subject, conflict_id):  # detect.py
                    raise BadInput(
                        f"conflict {conflict_id!r} was resolved for {conflict.winner!r} already",
                        field="winner",
                    )
            loser = b if winner == a else a
            return self._record_invalidation(
                tx,
                tenant,
                subject,
                OpKind.RESOLVE,
                loser,
                other=winner,
                conflict_id=conflict_id,
                invalidates=loser,
            )
