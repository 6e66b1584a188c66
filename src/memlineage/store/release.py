"""Release per tenant: mode, versioned generator configurations, shadow reviews, bypass.

Configurations and the release log are per tenant and append-only. Writes
that touch one subject (queueing or deciding a review, a bypass) take that
subject's clock row lock first (I7), like every other writer of a subject.
"""

from __future__ import annotations

import json
from typing import Any

from memlineage.errors import BadInput, NotFound
from memlineage.model import ArtifactStatus
from memlineage.raw.ingest import utc_now
from memlineage.store.core import StoreCore
from memlineage.store.rows import dumps
from memlineage.store.sql import Tx


class ReleaseMixin(StoreCore):
    # -- mode and configurations --

    def release_state(self, tenant: str) -> tuple[str, int | None, int | None]:
        """(mode, active configuration, previous configuration); ('auto', None, None) at first."""
        with self._read() as tx:
            return self._release_state(tx, tenant)

    def _release_state(self, tx: Tx, tenant: str) -> tuple[str, int | None, int | None]:
        row = tx.one(
            "SELECT mode, active_config, previous_config FROM release_state WHERE tenant = ?",
            (tenant,),
        )
        if row is None:
            return "auto", None, None
        return str(row[0]), row[1], row[2]

    def _ensure_release_row(self, tx: Tx, tenant: str) -> None:
        tx.execute(
            "INSERT INTO release_state (tenant, updated_at) VALUES (?, ?)"
            " ON CONFLICT (tenant) DO NOTHING",
            (tenant, utc_now()),
        )

    def _log_release(self, tx: Tx, tenant: str, action: str, detail: dict[str, Any]) -> None:
        tx.execute(
            "INSERT INTO release_log (tenant, at, action, detail) VALUES (?, ?, ?, ?)",
            (tenant, utc_now(), action, dumps(detail)),
        )

    def set_release_mode(self, tenant: str, mode: str) -> bool:
        """Set ``auto`` or ``shadow``; False when it was already so."""
        with self._write() as tx:
            self._ensure_release_row(tx, tenant)
            current = self._release_state(tx, tenant)[0]
            if current == mode:
                return False
            tx.execute(
                "UPDATE release_state SET mode = ?, updated_at = ? WHERE tenant = ?",
                (mode, utc_now(), tenant),
            )
            self._log_release(tx, tenant, "mode", {"from": current, "to": mode})
            return True

    def add_generator_config(self, tenant: str, config: dict[str, Any]) -> int:
        """Store a new configuration version (not yet active); returns its version."""
        with self._write() as tx:
            row = tx.one(
                "SELECT COALESCE(MAX(version), 0) FROM generator_configs WHERE tenant = ?",
                (tenant,),
            )
            version = int(row[0]) + 1
            tx.execute(
                "INSERT INTO generator_configs (tenant, version, config, created_at)"
                " VALUES (?, ?, ?, ?)",
                (tenant, version, dumps(config), utc_now()),
            )
            self._log_release(tx, tenant, "config", {"version": version, "config": config})
            return version

    def seed_generator_config(self, tenant: str, config: dict[str, Any]) -> int | None:
        """Store ``config`` as version 1 and make it active, only while the tenant has no
        configuration at all; returns 1, or None when one was stored already.

        One transaction: of two processes seeding at once, one inserts version 1 and
        the other's insert does nothing (versions start at 1 and are never deleted)."""
        with self._write() as tx:
            inserted = tx.count(
                "INSERT INTO generator_configs (tenant, version, config, created_at)"
                " VALUES (?, 1, ?, ?) ON CONFLICT DO NOTHING",
                (tenant, dumps(config), utc_now()),
            )
            if inserted != 1:
                return None
            self._log_release(tx, tenant, "config", {"version": 1, "config": config})
            self._ensure_release_row(tx, tenant)
            tx.execute(
                "UPDATE release_state SET active_config = 1, updated_at = ?"
                " WHERE tenant = ? AND active_config IS NULL",
                (utc_now(), tenant),
            )
            self._log_release(tx, tenant, "seed", {"from": None, "to": 1})
            return 1

    def generator_configs(self, tenant: str) -> list[tuple[int, dict[str, Any], str]]:
        """(version, configuration, created_at) of every version, oldest first."""
        with self._read() as tx:
            rows = tx.all(
                "SELECT version, config, created_at FROM generator_configs WHERE tenant = ?"
                " ORDER BY version",
                (tenant,),
            )
        return [(int(r[0]), json.loads(r[1]), str(r[2])) for r in rows]

    def activate_config(self, tenant: str, version: int | None, action: str) -> int | None:
        """Make ``version`` active (None: the built-in generator); returns the one it replaced."""
        with self._write() as tx:
            if (
                version is not None
                and tx.one(
                    "SELECT 1 FROM generator_configs WHERE tenant = ? AND version = ?",
                    (tenant, version),
                )
                is None
            ):
                raise NotFound(f"no configuration version {version}", field="version")
            self._ensure_release_row(tx, tenant)
            _, active, _ = self._release_state(tx, tenant)
            tx.execute(
                "UPDATE release_state SET active_config = ?, previous_config = ?, updated_at = ?"
                " WHERE tenant = ?",
                (version, active, utc_now(), tenant),
            )
            self._log_release(tx, tenant, action, {"from": active, "to": version})
            return active

    def release_log(self, tenant: str) -> list[tuple[str, str, dict[str, Any]]]:
        with self._read() as tx:
            rows = tx.all(
                "SELECT at, action, detail FROM release_log WHERE tenant = ? ORDER BY at",
                (tenant,),
            )
        return [(str(r[0]), str(r[1]), json.loads(r[2])) for r in rows]

    # -- the shadow review queue --

    def queue_review(self, tenant: str, subject: str, artifact_id: str) -> None:
        with self._write() as tx:
            self._lock_clock(tx, tenant, subject)
            tx.execute(
                "INSERT INTO reviews (tenant, subject, artifact_id, state, queued_at)"
                " VALUES (?, ?, ?, 'pending', ?) ON CONFLICT DO NOTHING",
                (tenant, subject, artifact_id, utc_now()),
            )

    def reviews(self, tenant: str, state: str | None = None) -> list[dict[str, Any]]:
        sql = (
            "SELECT subject, artifact_id, state, reviewer, reason, queued_at, decided_at"
            " FROM reviews WHERE tenant = ?"
        )
        params: list[Any] = [tenant]
        if state is not None:
            sql += " AND state = ?"
            params.append(state)
        with self._read() as tx:
            rows = tx.all(sql + " ORDER BY queued_at, artifact_id", params)
        names = ("subject", "artifact_id", "state", "reviewer", "reason", "queued_at", "decided_at")
        return [dict(zip(names, row, strict=True)) for row in rows]

    def decide_review(
        self, tenant: str, artifact_id: str, state: str, reviewer: str, reason: str | None
    ) -> None:
        """Record a decision on a pending review; a rejection also rejects the candidate."""
        subject = self._review_subject(tenant, artifact_id)
        with self._write() as tx:
            self._lock_clock(tx, tenant, subject)
            changed = tx.count(
                "UPDATE reviews SET state = ?, reviewer = ?, reason = ?, decided_at = ?"
                " WHERE tenant = ? AND subject = ? AND artifact_id = ? AND state = 'pending'",
                (state, reviewer, reason, utc_now(), tenant, subject, artifact_id),
            )
            if changed != 1:
                raise BadInput(f"review of {artifact_id!r} was decided already", field="artifact")
            if state == "rejected":
                tx.execute(
                    "UPDATE artifact_status SET status = ?, reason = ?, status_at = ?"
                    " WHERE tenant = ? AND subject = ? AND id = ? AND status = 'candidate'",
                    (
                        str(ArtifactStatus.REJECTED),
                        f"rejected in review by {reviewer}: {reason or 'no reason given'}",
                        utc_now(),
                        tenant,
                        subject,
                        artifact_id,
                    ),
                )

    def _review_subject(self, tenant: str, artifact_id: str) -> str:
        with self._read() as tx:
            row = tx.one(
                "SELECT subject, state FROM reviews WHERE tenant = ? AND artifact_id = ?",
                (tenant, artifact_id),
            )
        if row is None:
            raise NotFound(f"no review of {artifact_id!r}", field="artifact")
        return str(row[0])

    # -- a failed release: recall goes raw until a recovery publishes --

    def bypass(self, tenant: str, subject: str) -> bool:
        """Take the subject's summary out of recall (coverage untouched); False if it was."""
        with self._write() as tx:
            self._lock_clock(tx, tenant, subject)
            changed = tx.count(
                "UPDATE aliases SET bypassed = ? WHERE tenant = ? AND subject = ? AND bypassed = ?",
                (True, tenant, subject, False),
            )
            return bool(changed == 1)
