"""The derived layer's writes: step 7 (write an artifact) and step 8 (the switch)."""

from __future__ import annotations

import json

from memlineage.canonical import input_root
from memlineage.errors import NotFound
from memlineage.model import Artifact, ArtifactStatus, SwitchFailure, SwitchResult
from memlineage.raw.ingest import utc_now
from memlineage.raw.validity import source_state
from memlineage.store.core import StoreCore
from memlineage.store.reader import SqlReader
from memlineage.store.rows import dumps
from memlineage.store.sql import Tx


class SwitchMixin(StoreCore):
    def write_artifact(self, tenant: str, artifact: Artifact) -> None:
        """Step 7: store an attempt with its manifest and derivation edges. Not readable yet."""
        manifest = artifact.manifest
        with self._write() as tx:
            if self._lock_clock(tx, tenant, artifact.subject) is None:
                raise NotFound(f"no subject {artifact.subject!r}", field="subject")
            now = utc_now()
            tx.execute(
                "INSERT INTO artifacts (tenant, id, subject, manifest, output, gate, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    tenant,
                    artifact.id,
                    artifact.subject,
                    dumps(manifest.to_json()),
                    dumps(artifact.output.to_json()) if artifact.output else None,
                    dumps(artifact.gate.to_json()),
                    now,
                ),
            )
            tx.execute(
                "INSERT INTO artifact_status (tenant, subject, id, status, reason, status_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (tenant, artifact.subject, artifact.id, str(artifact.status), artifact.reason, now),
            )
            parents = list(manifest.input_ids)
            if manifest.derived_from_artifact:
                parents.append(manifest.derived_from_artifact)
            tx.executemany(
                "INSERT INTO derivation (tenant, subject, parent, child) VALUES (?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING",
                [(tenant, artifact.subject, parent, artifact.id) for parent in parents],
            )

    def switch(self, tenant: str, artifact_id: str, *, force: bool = False) -> SwitchResult:
        """Step 8: publish a candidate through the three-way CAS on the alias, or say why not.

        Unless ``force``, a candidate whose coverage and epoch the alias already
        publishes is refused as ``up_to_date``: one publish per (coverage, epoch).
        """
        with self._read() as tx:
            row = tx.one(
                "SELECT subject FROM artifacts WHERE tenant = ? AND id = ?", (tenant, artifact_id)
            )
        if row is None:
            raise NotFound(f"no artifact {artifact_id!r}", field="artifact")
        subject = str(row[0])
        with self._write() as tx:
            locked = tx.one(
                "UPDATE clocks SET switches = switches + 1 WHERE tenant = ? AND subject = ?"
                " RETURNING epoch, switches, high_water",
                (tenant, subject),
            )
            epoch, switch_no = int(locked[0]), int(locked[1])
            # No summary is switched over events not checked for conflicts: catch the
            # detection job up first, under this lock. A conflict it records bumps the
            # epoch, and the re-validation below refuses the switch for it.
            if self._catch_up_detection(tx, tenant, subject, int(locked[2])):
                epoch = int(tx.one(
                    "SELECT epoch FROM clocks WHERE tenant = ? AND subject = ?", (tenant, subject)
                )[0])  # fmt: skip
            artifact = SqlReader(tx, tenant).artifact(artifact_id, subject, output=False)
            assert artifact is not None
            refusal = self._refusal(tx, tenant, artifact, epoch)
            if refusal is None and not force:
                refusal = self._redundant(tx, tenant, artifact)
            if refusal is None:
                refusal = self._compare_and_swap(tx, tenant, artifact)
            alias = SqlReader(tx, tenant).alias(subject)
            if refusal is not None:
                reason, detail = refusal
                if artifact.status is ArtifactStatus.CANDIDATE:
                    self._set_status(
                        tx, tenant, artifact, ArtifactStatus.FAILED, f"{reason}: {detail}"
                    )
                return SwitchResult(False, artifact_id, reason, detail, alias)
            previous = artifact.manifest.expected_alias.artifact_id
            tx.execute(
                "UPDATE artifact_status SET status = 'superseded', status_at = ?"
                " WHERE tenant = ? AND subject = ? AND id = ? AND status = 'published'",
                (utc_now(), tenant, subject, previous),
            )
            # a fallback's reason stays: why the built-in output is what readers see
            self._set_status(tx, tenant, artifact, ArtifactStatus.PUBLISHED, artifact.reason)
            self._fail_other_candidates(tx, tenant, artifact)
            tx.execute(
                "INSERT INTO alias_history (tenant, subject, switch_no, artifact_id, source_epoch,"
                " covers_through, switched_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    tenant,
                    subject,
                    switch_no,
                    artifact_id,
                    alias.source_epoch,
                    alias.covers_through,
                    utc_now(),
                ),
            )
            return SwitchResult(True, artifact_id, None, "", alias)

    def _refusal(
        self, tx: Tx, tenant: str, artifact: Artifact, epoch: int
    ) -> tuple[SwitchFailure, str] | None:
        """Re-validate under the lock: status, epoch, every input, the conflict set."""
        manifest = artifact.manifest
        if artifact.status not in (ArtifactStatus.CANDIDATE, ArtifactStatus.STALE):
            moved = f"{SwitchFailure.ALIAS_MOVED}: "
            if artifact.status is ArtifactStatus.FAILED and (artifact.reason or "").startswith(
                moved
            ):  # failed by a later publish (see _fail_other_candidates): say so again
                return SwitchFailure.ALIAS_MOVED, (artifact.reason or "").removeprefix(moved)
            return SwitchFailure.NOT_A_CANDIDATE, f"artifact is {artifact.status}"
        if epoch != manifest.input_epoch:
            return SwitchFailure.EPOCH_CHANGED, (
                f"epoch is {epoch}, inputs were read at {manifest.input_epoch}"
            )
        if artifact.status is ArtifactStatus.STALE:
            return SwitchFailure.INPUT_INVALIDATED, f"artifact went stale: {artifact.reason}"
        subject = artifact.subject
        # Every input has seq <= newCoversThrough: one range read re-reads them all
        # (twice as fast as looking 100,000 ids up in lists of 500).
        reader = SqlReader(tx, tenant)
        wanted = set(manifest.input_ids)
        stored = reader.events(subject, through=manifest.new_covers_through)
        events = {e.id: e for e in stored if e.id in wanted}
        state = source_state(events.values(), reader.operations(subject), self.policy)
        for input_id in manifest.input_ids:
            if input_id not in events or input_id in state.invalid:
                why = state.invalid.get(input_id, "missing")
                return SwitchFailure.INPUT_INVALIDATED, f"input {input_id} is {why}"
        # The manifest's inputRoot fixes every input hash; recompute it from what is stored.
        if input_root((e.id, e.hash) for e in events.values()) != manifest.input_root:
            return SwitchFailure.INPUT_INVALIDATED, "an input's hash differs from the manifest's"
        unresolved = sorted(c.id for c in state.unresolved if c.a in events and c.b in events)
        if unresolved != sorted(manifest.expected_conflicts):
            return SwitchFailure.NEW_CONFLICT, f"unresolved conflicts are now {unresolved}"
        return None

    @staticmethod
    def _redundant(tx: Tx, tenant: str, artifact: Artifact) -> tuple[SwitchFailure, str] | None:
        """The alias already publishes this coverage at this epoch under the same budget
        (and is not bypassed): one publish per (coverage, epoch) unless forced."""
        m = artifact.manifest
        alias = SqlReader(tx, tenant).alias(artifact.subject)
        if (
            not alias.artifact_id
            or alias.bypassed
            or alias.source_epoch != m.input_epoch
            or alias.covers_through != m.new_covers_through
        ):
            return None
        row = tx.one(
            "SELECT manifest FROM artifacts WHERE tenant = ? AND subject = ? AND id = ?",
            (tenant, artifact.subject, alias.artifact_id),
        )
        if row is None or json.loads(row[0]).get("budget") != m.budget:
            return None  # a summary under another budget is another summary
        return SwitchFailure.UP_TO_DATE, (
            f"{alias.artifact_id} already publishes coverage {alias.covers_through}"
            f" at epoch {alias.source_epoch}"
        )

    @staticmethod
    def _fail_other_candidates(tx: Tx, tenant: str, published: Artifact) -> None:
        """Every other candidate of the subject expected an alias that is now gone for good
        (an alias never points back to an earlier artifact), so its CAS can no longer
        succeed: it fails now, with the reason, instead of lingering as a candidate (say,
        after its worker was killed between writing it and switching)."""
        tx.execute(
            "UPDATE artifact_status SET status = 'failed', reason = ?, status_at = ?"
            " WHERE tenant = ? AND subject = ? AND status = 'candidate' AND id <> ?",
            (
                f"{SwitchFailure.ALIAS_MOVED}: {published.id} was published before its switch",
                utc_now(),
                tenant,
                published.subject,
                published.id,
            ),
        )

    def _compare_and_swap(
        self, tx: Tx, tenant: str, artifact: Artifact
    ) -> tuple[SwitchFailure, str] | None:
        """The seed's CAS on all three of parent, epoch and coverage, coverage monotone (I6)."""
        m = artifact.manifest
        expected = m.expected_alias
        swapped = tx.count(
            "UPDATE aliases SET artifact_id = ?, source_epoch = ?, covers_through = ?,"
            " bypassed = ? WHERE tenant = ? AND subject = ? AND artifact_id = ?"
            " AND source_epoch = ? AND covers_through = ? AND ? >= covers_through",
            (
                artifact.id,
                m.input_epoch,
                m.new_covers_through,
                False,
                tenant,
                artifact.subject,
                expected.artifact_id,
                expected.source_epoch,
                expected.covers_through,
                m.new_covers_through,
            ),
        )
        if swapped == 1:
            return None
        current = SqlReader(tx, tenant).alias(artifact.subject)
        if (current.artifact_id, current.source_epoch, current.covers_through) != (
            expected.artifact_id,
            expected.source_epoch,
            expected.covers_through,
        ):
            return SwitchFailure.ALIAS_MOVED, (
                f"alias is ({current.artifact_id or '-'}, {current.source_epoch},"
                f" {current.covers_through}), expected ({expected.artifact_id or '-'},"
                f" {expected.source_epoch}, {expected.covers_through})"
            )
        return SwitchFailure.COVERAGE_REGRESSION, (
            f"covers_through {current.covers_through} > {m.new_covers_through}"
        )

    @staticmethod
    def _set_status(
        tx: Tx, tenant: str, artifact: Artifact, status: ArtifactStatus, reason: str | None
    ) -> None:
        tx.execute(
            "UPDATE artifact_status SET status = ?, reason = ?, status_at = ?"
            " WHERE tenant = ? AND subject = ? AND id = ?",
            (str(status), reason, utc_now(), tenant, artifact.subject, artifact.id),
        )
