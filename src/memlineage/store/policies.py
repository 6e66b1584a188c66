"""Per-tenant policies as versioned data, and rolling a trust policy out to every subject.

A policy change writes a new version row (never an edit). The temporal policy
is read by the detection job when it records a conflict. A trust policy
version reaches a subject as a ``policy`` operation in that subject's own
transaction (its clock lock first, I7): the pure fold (select.source_state)
then judges the subject's events by it. Rolling out walks the tenant's
subjects in bounded batches, resumably (``clocks.trust_policy`` says which
version each subject has); nothing locks two subjects at once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memlineage.errors import BadInput
from memlineage.meaning.policy import (
    DEFAULT_TEMPORAL,
    DEFAULT_TRUST,
    TEMPORAL,
    TRUST,
    TemporalPolicy,
    VersionedTrust,
)
from memlineage.model import Operation, OpKind
from memlineage.progress import Advance
from memlineage.raw.ingest import utc_now
from memlineage.raw.validity import source_state
from memlineage.store.core import StoreCore
from memlineage.store.protocol import OpResult, PolicyVersion, Rollout
from memlineage.store.reader import SqlReader
from memlineage.store.rows import dumps
from memlineage.store.sql import Tx


class PoliciesMixin(StoreCore):
    # -- reading --

    def policy_history(self, tenant: str, name: str | None = None) -> list[PolicyVersion]:
        """Every stored version, oldest first (the built-in version 1 is not stored)."""
        sql = "SELECT name, version, body, reason, recorded_at FROM policies WHERE tenant = ?"
        params: list[Any] = [tenant]
        if name is not None:
            sql += " AND name = ?"
            params.append(name)
        with self._read() as tx:
            rows = tx.all(sql + " ORDER BY name, version", params)
        return [PolicyVersion(r[0], int(r[1]), json.loads(r[2]), r[3], r[4]) for r in rows]

    def temporal_policy(self, tenant: str) -> TemporalPolicy:
        with self._read() as tx:
            return self._temporal_policy(tx, tenant)

    def trust_policy(self, tenant: str) -> VersionedTrust:
        with self._read() as tx:
            return self._trust_policy(tx, tenant)

    def _latest(self, tx: Tx, tenant: str, name: str) -> tuple[int, dict[str, Any]] | None:
        row = tx.one(
            "SELECT version, body FROM policies WHERE tenant = ? AND name = ?"
            " ORDER BY version DESC LIMIT 1",
            (tenant, name),
        )
        return (int(row[0]), json.loads(row[1])) if row else None

    def _temporal_policy(self, tx: Tx, tenant: str) -> TemporalPolicy:
        latest = self._latest(tx, tenant, TEMPORAL)
        return TemporalPolicy.from_json(*latest) if latest else DEFAULT_TEMPORAL

    def _trust_policy(self, tx: Tx, tenant: str) -> VersionedTrust:
        latest = self._latest(tx, tenant, TRUST)
        return VersionedTrust.from_json(*latest) if latest else DEFAULT_TRUST

    # -- writing a version --

    def set_temporal_policy(
        self, tenant: str, policy: TemporalPolicy, reason: str | None = None
    ) -> TemporalPolicy:
        """Store ``policy`` as the next version; it governs conflicts detected from now on."""
        version = self._store_version(tenant, TEMPORAL, policy.to_json(), reason)
        return TemporalPolicy(version, policy.rules, policy.default)

    def set_trust_policy(
        self, tenant: str, trust: VersionedTrust, reason: str | None = None
    ) -> VersionedTrust:
        """Store ``trust`` as the next version; ``roll_out_trust_policy`` applies it."""
        version = self._store_version(tenant, TRUST, trust.to_json(), reason)
        return VersionedTrust(version, trust.policy)

    def _store_version(
        self, tenant: str, name: str, body: dict[str, Any], reason: str | None
    ) -> int:
        for attempt in range(2):
            try:
                with self._write() as tx:
                    latest = self._latest(tx, tenant, name)
                    version = (latest[0] if latest else 1) + 1  # version 1 is the built-in
                    tx.execute(
                        "INSERT INTO policies (tenant, name, version, body, reason, recorded_at)"
                        " VALUES (?, ?, ?, ?, ?, ?)",
                        (tenant, name, version, dumps(body), reason, utc_now()),
                    )
                    return version
            except self.integrity_errors:
                if attempt:  # two writers took the same number; the second try reads it
                    raise
        raise AssertionError("unreachable")

    # -- rolling a trust policy out --

    def roll_out_trust_policy(
        self, tenant: str, batch: int = 100, done: Advance | None = None
    ) -> Rollout:
        """Apply the current trust policy to at most ``batch`` subjects still on an older one.

        Each subject is its own transaction. A subject whose validity changes
        gets a ``policy`` operation that advances its epoch and stales what
        derives from a newly quarantined event (a rebuild is then due); the
        others record the version without touching the epoch. ``done`` is
        called with 1 after each subject (a progress bar's count).
        """
        if batch < 1:
            raise BadInput("batch must be at least 1", field="batch")
        trust = self.trust_policy(tenant)
        with self._read() as tx:
            subjects = [
                r[0]
                for r in tx.all(
                    "SELECT subject FROM clocks WHERE tenant = ? AND trust_policy < ?"
                    " ORDER BY subject LIMIT ?",
                    (tenant, trust.version, batch),
                )
            ]
        applied: list[str] = []
        affected: list[OpResult] = []
        for subject in subjects:
            result = self._apply_trust(tenant, subject, trust)
            if result is not None:
                applied.append(subject)
                if result.changed:
                    affected.append(result)
            if done is not None:
                done(1)
        remaining = self.trust_rollout_pending(tenant, trust.version)
        return Rollout(trust.version, tuple(applied), tuple(affected), remaining)

    def trust_rollout_pending(self, tenant: str, version: int | None = None) -> int:
        """How many subjects are on a trust policy older than ``version`` (default: current)."""
        if version is None:
            version = self.trust_policy(tenant).version
        with self._read() as tx:
            return int(
                tx.one(
                    "SELECT COUNT(*) FROM clocks WHERE tenant = ? AND trust_policy < ?",
                    (tenant, version),
                )[0]
            )

    def _apply_trust(self, tenant: str, subject: str, trust: VersionedTrust) -> OpResult | None:
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            assert clock is not None
            row = tx.one(
                "SELECT trust_policy FROM clocks WHERE tenant = ? AND subject = ?",
                (tenant, subject),
            )
            if int(row[0]) >= trust.version:
                return None  # another process got here first
            reader = SqlReader(tx, tenant)
            events = reader.events(subject)
            ops = reader.operations(subject)
            fields = trust.operation_fields()
            probe = Operation(
                op_seq=(ops[-1].op_seq + 1) if ops else 1,
                kind=OpKind.POLICY,
                target=fields["target"],
                trust=fields["trust"],
                taint=tuple(fields["taint"]) if fields["taint"] is not None else None,
            )
            before = set(source_state(events, ops, self.policy).invalid)
            after = set(source_state(events, [*ops, probe], self.policy).invalid)
            reason = f"trust policy v{trust.version}"
            tx.execute(
                "UPDATE clocks SET trust_policy = ? WHERE tenant = ? AND subject = ?",
                (trust.version, tenant, subject),
            )
            if before == after:
                self._record_quietly(tx, tenant, subject, fields, reason)
                return OpResult(subject, clock.epoch, changed=False)
            result = self._record_invalidation(
                tx, tenant, subject, OpKind.POLICY, fields["target"],
                trust=fields["trust"], taint=fields["taint"], reason=reason,
            )  # fmt: skip
            newly_invalid = sorted(after - before)
            stale: tuple[str, ...] = ()
            if newly_invalid:
                stale = self._mark_descendants_stale(
                    tx, tenant, subject, newly_invalid, f"{reason} quarantines a source"
                )
            return OpResult(subject, result.epoch, True, stale=stale)

    def _record_quietly(
        self, tx: Tx, tenant: str, subject: str, fields: dict[str, Any], reason: str
    ) -> None:
        """A ``policy`` operation that changes no event's validity: no epoch to advance."""
        row = tx.one(
            "UPDATE clocks SET ops = ops + 1 WHERE tenant = ? AND subject = ? RETURNING epoch, ops",
            (tenant, subject),
        )
        taint = fields["taint"]
        tx.execute(
            "INSERT INTO operations (tenant, subject, op_seq, kind, target, other, conflict_id,"
            " key, trust, taint, reason, epoch, recorded_at)"
            " VALUES (?, ?, ?, ?, ?, NULL, NULL, NULL, ?, ?, ?, ?, ?)",
            (
                tenant,
                subject,
                int(row[1]),
                str(OpKind.POLICY),
                fields["target"],
                fields["trust"],
                dumps(taint) if taint is not None else None,
                reason,
                int(row[0]),
                utc_now(),
            ),
        )

    def _on_new_subjects(self, tx: Tx, tenant: str, subjects: Sequence[str]) -> None:
        """New subjects start under the tenant's current trust policy (called by append).

        One read of the policy for the batch: its subjects are locked together.
        """
        trust = self._trust_policy(tx, tenant)
        if trust.version == DEFAULT_TRUST.version:
            return
        for subject in subjects:
            tx.execute(
                "UPDATE clocks SET trust_policy = ? WHERE tenant = ? AND subject = ?",
                (trust.version, tenant, subject),
            )
            self._record_quietly(
                tx, tenant, subject, trust.operation_fields(), f"trust policy v{trust.version}"
            )
