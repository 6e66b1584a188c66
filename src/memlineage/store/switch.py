"""The derived layer's writes: step 7 (write an artifact) and step 8 (the switch)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from memlineage.canonical import input_root
from memlineage.errors import NotFound, StoreError
from memlineage.meaning.extract import RULES_VERSION
from memlineage.model import (
    Alias,
    Artifact,
    ArtifactStatus,
    Event,
    Item,
    Manifest,
    Operation,
    SwitchFailure,
    SwitchResult,
)
from memlineage.raw.ingest import utc_now
from memlineage.raw.validity import source_state
from memlineage.store import deltas, inputs
from memlineage.store.core import StoreCore
from memlineage.store.protocol import Head, SubjectInput
from memlineage.store.reader import (
    head_from_row,
    head_statement,
    operations_statement,
)
from memlineage.store.rows import (
    ARTIFACTS,
    OP_COLUMNS,
    artifact_columns,
    artifact_from_row,
    dumps,
    items_text,
    manifest_from_json,
    op_from_row,
    output_from_json,
    remember_materialised,
    stored_output,
)
from memlineage.store.sql import Statement, Tx


class _Input(NamedTuple):
    """What the switch re-reads of an input under the lock (``source_state``, inputRoot)."""

    id: str
    hash: str
    trust: str
    taint: tuple[str, ...]


# The subject's clock exists (the artifact's rows are written only then).
_CLOCK_EXISTS = "EXISTS (SELECT 1 FROM clocks WHERE tenant = ? AND subject = ?)"
# The subject of the artifact a switch publishes (each of its reads names it so).
_SUBJECT_OF = "(SELECT subject FROM artifacts WHERE tenant = ? AND id = ?)"

# What the switch re-reads of an event (``_inputs`` reads the columns in this order).
_INPUT_ROWS = "SELECT id, hash, trust, taint, seq FROM events"


def _alias_of(column: str) -> str:
    """One column of the alias of the artifact a switch publishes (0 without one)."""
    return (
        f"COALESCE((SELECT {column} FROM aliases WHERE tenant = ? AND subject = {_SUBJECT_OF}), 0)"
    )


# After the CAS, in its transaction: it took (the alias names the new artifact).
_CAS_TOOK = "EXISTS (SELECT 1 FROM aliases WHERE tenant = ? AND subject = ? AND artifact_id = ?)"


@dataclass(frozen=True)
class _Switch:
    """A switch's outcome as planned under the lock; ``cas``: the CAS's cursor, read
    once the transaction committed (None: refused before the CAS)."""

    planned: SwitchResult
    cas: Any

    def result(self) -> SwitchResult:
        if self.cas is None or int(self.cas.rowcount) == 1:
            return self.planned
        # Unreachable while every writer of an alias holds the subject's lock (I7): the
        # publish's other writes were conditional on the CAS, so nothing was published.
        raise StoreError(f"the CAS of {self.planned.artifact_id} did not take under the lock")


def _inputs(rows: list[Any], coverage: int) -> list[_Input]:
    """Event rows (id, hash, trust, taint, seq) up to ``coverage``, as the switch reads
    them: every input has seq <= newCoversThrough."""
    return [
        _Input(r[0], r[1], r[2], () if r[3] == "[]" else tuple(json.loads(r[3])))
        for r in rows
        if int(r[4]) <= coverage
    ]


def _trusted_base(
    manifest: Manifest,
    alias: Alias,
    published: str | None,
    epoch: int,
    since: Sequence[Operation],
    tail: Sequence[_Input],
) -> Manifest | None:
    """The published artifact whose re-validated inputs a switch need not re-read.

    The artifact was built on it (``derivedFromArtifact``, with a ``tailRoot``) and the
    alias still names it: its switch re-validated its inputs under this lock, events
    never change, and only an operation can make one invalid, which moves the epoch (a
    policy recorded without moving it changes no stored event: ``policies``). ``since``
    holds the operations other than policies from the alias's epoch on: the one that
    began it (recorded before the base read the subject) and each one after, one epoch
    each. When those after name only events past its coverage (``tail``: a conflict
    detected among the new events, a revocation of one), none changed what it read.
    Its inputs must come first in the new manifest, unchanged; then only the inputs
    after its coverage are re-validated (issue #26), under the policy in force and the
    operations since. Anything else (no base, another alias, an operation on an older
    event, an epoch not moved once per operation) re-validates all.
    ``published``: the alias's artifact's manifest, as stored.
    """
    base_id = manifest.derived_from_artifact
    if manifest.tail_root is None or base_id is None or published is None:
        return None
    if alias.bypassed or alias.artifact_id != base_id or not _one_epoch_each(since, alias, epoch):
        return None
    newer = {row.id for row in tail}
    for op in _after_epoch(since, alias):
        if op.target not in newer or (op.other is not None and op.other not in newer):
            return None
    base = manifest_from_json(published)
    if base.artifact_id != base_id or base.new_covers_through != alias.covers_through:
        return None
    if manifest.input_ids[: len(base.input_ids)] != base.input_ids:
        return None
    return base


class _Fence(NamedTuple):
    """What an artifact's rows are written behind: its subject's clock exists, and for a
    delta, its base is stored whole with no erasure recorded since the base's epoch."""

    sql: str
    params: tuple[Any, ...]
    base: str | None

    @staticmethod
    def on(tenant: str, subject: str, base: deltas.StoredBase | None) -> _Fence:
        if base is None:
            return _Fence(_CLOCK_EXISTS, (tenant, subject), None)
        return _Fence(
            f"{_CLOCK_EXISTS} AND EXISTS (SELECT 1 FROM artifacts b WHERE b.tenant = ?"
            " AND b.subject = ? AND b.id = ? AND b.base IS NULL AND b.output IS NOT NULL)"
            " AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.tenant = ?"
            " AND o.subject = ? AND o.epoch > ? AND o.kind = 'erase')",
            (tenant, subject, tenant, subject, base.id, tenant, subject, base.epoch),
            base.id,
        )


def _edges_from(manifest: Manifest, base: deltas.StoredBase | None) -> list[str]:
    """The parents of an artifact's derivation edges: every input and the artifact it
    was derived from; for an output stored on a base, the base and the inputs the base
    did not read.

    The base's inputs reach it through the base's edge, so staling, which walks the
    edges, finds it either way, and a run writes lineage rows for what it added, not
    for the whole subject. A base is stored whole with every input's edge, so the walk
    is two steps deep whatever the history (a chain of runs each linking only what it
    added was tried and taken back: docs/benchmarks.md). An input of the base that
    this run left out reaches it too: invalidating it stales this artifact as well,
    one rebuild more, never a summary served over an invalid source."""
    parents = list(manifest.input_ids)
    if base is not None and base.inputs:
        parents = sorted(set(parents).difference(base.inputs))  # C-level: 100,000 ids
        parents.append(base.id)
    if manifest.derived_from_artifact:
        parents.append(manifest.derived_from_artifact)
    return parents


def _one_epoch_each(since: Sequence[Operation], alias: Alias, epoch: int) -> bool:
    """Whether the operations after the alias's epoch moved it once each, up to ``epoch``,
    and at most one is of the alias's epoch (the one that began it)."""
    epochs = [op.epoch for op in since]
    if alias.source_epoch > 0 and epochs and epochs[0] == alias.source_epoch:
        epochs = epochs[1:]
    return epochs == list(range(alias.source_epoch + 1, epoch + 1))


def _after_epoch(since: Sequence[Operation], alias: Alias) -> list[Operation]:
    return [op for op in since if op.epoch > alias.source_epoch]


class SwitchMixin(StoreCore):
    def write_artifact(
        self, tenant: str, artifact: Artifact, items: Sequence[tuple[Event, Sequence[Item]]] = ()
    ) -> None:
        """Step 7: store an attempt with its manifest and derivation edges. Not readable yet.

        ``items``: events the run extracted, with their items, stored for the next
        process that reads the subject (schema 17), in the same transaction.
        The subject's lock first (I7); the rows are written only if its clock exists, so
        the transaction reads nothing before its commit (PostgreSQL: one round trip).

        The output is stored as a delta on the base of the parent this process stored
        or read, when it stays small (schema 18, store/deltas.py), and only if that base
        is as this process stored it: no erasure since the base's epoch (an erasure
        rewrites artifact rows). Otherwise it is stored whole, in a second transaction
        if the first found the base rewritten."""
        # the summary the run built on, else the one it read as published (a first run
        # in a process builds afresh, yet its output is mostly the published one's)
        manifest = artifact.manifest
        parent = manifest.derived_from_artifact or manifest.expected_alias.artifact_id
        base = deltas.recorded(self, tenant, parent) if parent and artifact.output else None
        if not self._write_artifact(tenant, artifact, items, base):
            self._write_artifact(tenant, artifact, items, None)

    def _write_artifact(
        self,
        tenant: str,
        artifact: Artifact,
        items: Sequence[tuple[Event, Sequence[Item]]],
        base: deltas.StoredBase | None,
    ) -> bool:
        """One try of ``write_artifact``; False: the base changed, nothing was written."""
        subject = artifact.subject
        manifest = artifact.manifest.to_json()
        manifest_text = dumps(manifest)
        output_text = None
        if artifact.output is not None:
            output_text, base = stored_output(artifact.output, base)
        fence = _Fence.on(tenant, subject, base)
        parents = _edges_from(artifact.manifest, base)
        with self._pipelined_write() as tx:
            locked = tx.execute(
                "UPDATE clocks SET switches = switches WHERE tenant = ? AND subject = ?",
                (tenant, subject),
            )
            rows = self._artifact_rows(tenant, artifact, manifest_text, output_text, parents, fence)
            if items:
                rows.append(self._items_row(tenant, artifact.subject, items, fence))
            written = [tx.execute(sql, params) for sql, params in rows]
        if int(locked.rowcount) != 1:
            raise NotFound(f"no subject {subject!r}", field="subject")
        if int(written[0].rowcount) != 1:
            return False  # the clock is there: a delta's base was rewritten
        # The next run of the subject reads this artifact as its parent: it need not
        # parse what this process just serialised (a stored output parses back equal;
        # the manifest goes through its JSON form: an expected alias keeps only that).
        manifest_from_json.remember(manifest_text, Manifest.from_json(manifest))
        if artifact.output is not None and output_text is not None:
            if base is None:
                output_from_json.remember(output_text, artifact.output)
                base = deltas.StoredBase.whole(artifact, artifact.output)
            else:
                remember_materialised(output_text, base, artifact.output)
            deltas.record(self, tenant, artifact.id, base)
            inputs.wrote(self, tenant, artifact.id, artifact.output)
        return True

    def _artifact_rows(
        self,
        tenant: str,
        artifact: Artifact,
        manifest_text: str,
        output_text: str | None,
        parents: list[str],
        fence: _Fence,
    ) -> list[Statement]:
        """The artifact's row (its manifest and output as serialised, and the base its
        output is a delta on) and its derivation edges from ``parents`` (step 7), each
        behind ``fence``."""
        now = utc_now()
        row = (
            "INSERT INTO artifacts (tenant, id, subject, manifest, output, gate, created_at,"
            f" base) SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE {fence.sql}",
            (
                tenant,
                artifact.id,
                artifact.subject,
                manifest_text,
                output_text,
                dumps(artifact.gate.to_json()),
                now,
                fence.base,
                *fence.params,
            ),
        )
        status: Statement = (
            "INSERT INTO artifact_status (tenant, subject, id, status, reason, status_at)"
            f" SELECT ?, ?, ?, ?, ?, ? WHERE {fence.sql}",
            (
                tenant,
                artifact.subject,
                artifact.id,
                str(artifact.status),
                artifact.reason,
                now,
                *fence.params,
            ),
        )
        # One statement for every edge: a statement costs the client more than a row.
        # (the WHERE also keeps SQLite from reading ON CONFLICT as a join's)
        edges: Statement = (
            "INSERT INTO derivation (tenant, subject, parent, child)"
            f" SELECT ?, ?, value, ? FROM {self.text_rows} WHERE {fence.sql}"
            " ON CONFLICT DO NOTHING",
            (
                tenant,
                artifact.subject,
                artifact.id,
                self.text_list(parents),
                *fence.params,
            ),
        )
        return [row, status, edges]

    def _items_row(
        self,
        tenant: str,
        subject: str,
        items: Sequence[tuple[Event, Sequence[Item]]],
        fence: _Fence,
    ) -> Statement:
        """The events' items as ``event_items`` rows, one statement. Not for an event
        erased since the run read it: the erasure (under the same lock) deleted what
        was stored of its text, and nothing may store it again."""
        listed = self.event_texts_params([(e.seq, e.id, items_text(i)) for e, i in items])
        return (
            "INSERT INTO event_items (tenant, subject, seq, rules, items)"
            f" SELECT ?, ?, seq, ?, body FROM {self.event_texts_rows}"
            f" WHERE {fence.sql} AND NOT EXISTS (SELECT 1 FROM erasures x"
            " WHERE x.tenant = ? AND x.subject = ? AND x.event_id = listed.id)"
            " ON CONFLICT (tenant, subject, seq) DO UPDATE"
            " SET rules = excluded.rules, items = excluded.items"
            " WHERE event_items.rules <> excluded.rules",
            (tenant, subject, RULES_VERSION, *listed, *fence.params, tenant, subject),
        )

    def job_head(self, tenant: str, subject: str) -> tuple[Head, bool] | None:
        """The subject's head, and whether its detection job has nothing to do (checked
        and kinds stored up to its high water, under the current rules): one statement.

        The published artifact comes without its output (``None``): a run asks only
        whether it is up to date, and the output is what grows with the subject (some
        8 MB at 20,000 events, read again by the snapshot when the run goes on)."""
        extra = ", c.detected_through, c.kinds_through, c.kinds_rules"
        with self._one_statement(read_only=True) as tx:
            row = tx.one(*head_statement(tenant, subject, extra, output=False))
        if row is None:
            return None
        head = head_from_row(row)
        detected, kinds, rules = (int(v) for v in row[-3:])
        high_water = head.clock.high_water
        caught_up = detected >= high_water and kinds >= detected and rules == RULES_VERSION
        return head, caught_up

    def consolidation_input(self, tenant: str, subject: str) -> SubjectInput | None:
        """Head, events up to its high water and operations, in one snapshot (PostgreSQL:
        one round trip); the events this process read before are not read again while
        no operation was recorded since (store/inputs.py)."""
        return inputs.consolidation_input(self, self._read_together, tenant, subject)

    def switch(self, tenant: str, artifact_id: str, *, force: bool = False) -> SwitchResult:
        """Step 8: publish a candidate through the three-way CAS on the alias, or say why not.

        Unless ``force``, a candidate whose coverage and epoch the alias already
        publishes is refused as ``up_to_date``: one publish per (coverage, epoch).

        One transaction, two round trips on PostgreSQL: the lock of the artifact's
        subject (I7) and every re-read go out together; the re-validation, the epoch
        check and the CAS's decision are made on what was read under the lock (every
        writer of an alias holds it, so the alias cannot move before the CAS runs);
        the CAS then goes out with the commit, the publish's other writes conditional
        on it, and its row count is read after.
        """
        with self._pipelined_write() as tx:
            plan = self._plan_switch(tx, tenant, artifact_id, force)
        return plan.result()

    def _plan_switch(self, tx: Tx, tenant: str, artifact_id: str, force: bool) -> _Switch:
        of = (tenant, artifact_id)
        lock: Statement = (  # an artifact's subject never changes: read it in the lock
            "UPDATE clocks SET switches = switches + 1"
            " WHERE (tenant, subject) = (SELECT tenant, subject FROM artifacts"
            " WHERE tenant = ? AND id = ?) RETURNING subject, epoch, switches, high_water,"
            " detected_through",
            of,
        )
        locked, *reads = tx.all_together([lock, *self._switch_reads(tenant, artifact_id)])
        if not locked:
            raise NotFound(f"no artifact {artifact_id!r}", field="artifact")
        subject = str(locked[0][0])
        epoch, switch_no, high_water, detected = (int(v) for v in locked[0][1:])
        # No summary is switched over events not checked for conflicts: catch the
        # detection job up first, under this lock. A conflict it records bumps the
        # epoch (and may make the artifact stale): read again after it.
        if detected < high_water and self._catch_up_detection(tx, tenant, subject, high_water):
            epoch = int(tx.one(
                "SELECT epoch FROM clocks WHERE tenant = ? AND subject = ?", (tenant, subject)
            )[0])  # fmt: skip
            reads = tx.all_together(self._switch_reads(tenant, artifact_id))
        artifact = artifact_from_row(reads[0][0])
        coverage = artifact.manifest.new_covers_through
        alias_row = reads[3][0]
        alias = Alias(alias_row[0], int(alias_row[1]), int(alias_row[2]), bool(alias_row[3]))
        tail = _inputs(reads[1], coverage)  # the events after the alias's coverage
        since = [op_from_row(r) for r in reads[4]]
        base = _trusted_base(artifact.manifest, alias, alias_row[4], epoch, since, tail)
        ops = [op_from_row(r) for r in reads[2]]  # every one while the alias covers nothing
        if base is not None:  # the policies and those since are all its tail can meet
            ops = sorted([*ops, *_after_epoch(since, alias)], key=lambda op: op.op_seq)
            refusal = self._refusal(artifact, epoch, tail, ops, base)
        elif alias.covers_through > 0:  # every event up to the coverage, every operation
            head, ops = self._everything_before(tx, tenant, subject, alias.covers_through)
            refusal = self._refusal(artifact, epoch, head + tail, ops)
        else:  # a first summary: the tail is every event
            refusal = self._refusal(artifact, epoch, tail, ops)
        if refusal is None and not force:
            refusal = self._redundant(artifact, alias, alias_row[4])
        if refusal is None:
            refusal = self._predicted_cas(artifact, alias)
        if refusal is not None:
            reason, detail = refusal
            if artifact.status is ArtifactStatus.CANDIDATE:
                self._set_status(tx, tenant, artifact, ArtifactStatus.FAILED, f"{reason}: {detail}")
            return _Switch(SwitchResult(False, artifact_id, reason, detail, alias), None)
        return _Switch(
            SwitchResult(True, artifact_id, None, "", self._swapped(artifact)),
            self._publish(tx, tenant, artifact, switch_no),
        )

    @staticmethod
    def _switch_reads(tenant: str, artifact_id: str) -> list[Statement]:
        """What the switch re-validates, read under the lock: the artifact (its manifest;
        not its output), the subject's events after the alias's coverage (an input's id,
        hash and trust: one range read), its policy operations (every operation while
        the alias covers nothing), the alias with the manifest of the artifact it
        publishes, and how many other operations were recorded since the alias's epoch
        began (two at most: a switch asks only whether there is more than one). Each
        reads the index entries it needs, not the subject's operation log. The events
        before the alias's coverage and the other operations are read only when every
        input is re-validated."""
        of = (tenant, artifact_id)
        columns = artifact_columns(output=False)
        return [
            (f"SELECT {columns} FROM {ARTIFACTS} WHERE a.tenant = ? AND a.id = ?", of),
            (
                f"{_INPUT_ROWS} WHERE tenant = ? AND subject = {_SUBJECT_OF}"
                f" AND seq > {_alias_of('covers_through')} ORDER BY seq",
                (tenant, *of, tenant, *of),
            ),
            (  # only the policies once the alias covers events (every one before)
                f"SELECT {OP_COLUMNS} FROM operations WHERE tenant = ?"
                f" AND subject = {_SUBJECT_OF} AND kind = 'policy'"
                f" AND {_alias_of('covers_through')} <> 0"
                f" UNION ALL SELECT {OP_COLUMNS} FROM operations WHERE tenant = ?"
                f" AND subject = {_SUBJECT_OF} AND {_alias_of('covers_through')} = 0"
                " ORDER BY op_seq",
                (tenant, *of, tenant, *of, tenant, *of, tenant, *of),
            ),
            (
                "SELECT a.artifact_id, a.source_epoch, a.covers_through, a.bypassed, r.manifest"
                " FROM aliases a LEFT JOIN artifacts r ON r.tenant = a.tenant"
                " AND r.subject = a.subject AND r.id = a.artifact_id"
                f" WHERE a.tenant = ? AND a.subject = {_SUBJECT_OF}",
                (tenant, *of),
            ),
            (  # the operations other than policies from the alias's epoch on (a range
                # of operations_by_epoch: epochs never decrease along op_seq)
                f"SELECT {OP_COLUMNS} FROM operations WHERE tenant = ?"
                f" AND subject = {_SUBJECT_OF} AND kind <> 'policy'"
                f" AND epoch >= {_alias_of('source_epoch')} ORDER BY op_seq",
                (tenant, *of, tenant, *of),
            ),
        ]

    def _publish(self, tx: Tx, tenant: str, artifact: Artifact, switch_no: int) -> Any:
        """The CAS, and what a publish changes besides, each only if the CAS took (the
        alias then names this artifact, which no alias named before: it was a candidate).
        Sent with the commit; returns the CAS's cursor, whose row count says if it took."""
        m = artifact.manifest
        subject = artifact.subject
        cas = self._compare_and_swap(tx, tenant, artifact)
        took = f" AND {_CAS_TOOK}"
        took_params = (tenant, subject, artifact.id)
        previous = m.expected_alias.artifact_id
        now = utc_now()
        tx.execute(
            "UPDATE artifact_status SET status = 'superseded', status_at = ?"
            f" WHERE tenant = ? AND subject = ? AND id = ? AND status = 'published'{took}",
            (now, tenant, subject, previous, *took_params),
        )
        # a fallback's reason stays: why the built-in output is what readers see
        tx.execute(
            "UPDATE artifact_status SET status = ?, reason = ?, status_at = ?"
            f" WHERE tenant = ? AND subject = ? AND id = ?{took}",
            (
                str(ArtifactStatus.PUBLISHED),
                artifact.reason,
                now,
                tenant,
                subject,
                artifact.id,
                *took_params,
            ),
        )
        self._fail_other_candidates(tx, tenant, artifact, took, took_params)
        tx.execute(
            "INSERT INTO alias_history (tenant, subject, switch_no, artifact_id, source_epoch,"
            f" covers_through, switched_at) SELECT ?, ?, ?, ?, ?, ?, ? WHERE {_CAS_TOOK}",
            (
                tenant,
                subject,
                switch_no,
                artifact.id,
                m.input_epoch,
                m.new_covers_through,
                now,
                *took_params,
            ),
        )
        return cas

    @staticmethod
    def _swapped(artifact: Artifact) -> Alias:
        """The alias after a CAS to ``artifact`` (bypass lifted)."""
        m = artifact.manifest
        return Alias(artifact.id, m.input_epoch, m.new_covers_through, False)

    def _everything_before(
        self, tx: Tx, tenant: str, subject: str, seq: int
    ) -> tuple[list[_Input], list[Operation]]:
        """The subject's events up to ``seq`` (the alias's coverage) and all of its
        operations, as the switch re-reads them to re-validate every input (one round
        trip)."""
        events, ops = tx.all_together(
            [
                (
                    f"{_INPUT_ROWS} WHERE tenant = ? AND subject = ? AND seq <= ? ORDER BY seq",
                    (tenant, subject, seq),
                ),
                operations_statement(tenant, subject),
            ]
        )
        return _inputs(events, seq), [op_from_row(r) for r in ops]

    def _refusal(
        self,
        artifact: Artifact,
        epoch: int,
        stored: list[_Input],
        ops: list[Operation],
        base: Manifest | None = None,
    ) -> tuple[SwitchFailure, str] | None:
        """Re-validate under the lock: status, epoch, the inputs, the conflict set
        (``stored``, ``ops``: the subject's events up to the coverage, or after the
        ``base``'s, and operations). With a ``base`` (``_trusted_base``) only the inputs
        after its coverage are re-validated, against the manifest's ``tailRoot``."""
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
        # Every input has seq <= newCoversThrough: one range read re-read them all
        # (twice as fast as looking 100,000 ids up in lists of 500).
        checked = manifest.input_ids[len(base.input_ids) :] if base else manifest.input_ids
        root = manifest.tail_root if base else manifest.input_root
        wanted = set(checked)
        events = {e.id: e for e in stored if e.id in wanted}
        state = source_state(events.values(), ops, self.policy)
        for input_id in checked:
            if input_id not in events or input_id in state.invalid:
                why = state.invalid.get(input_id, "missing")
                return SwitchFailure.INPUT_INVALIDATED, f"input {input_id} is {why}"
        # The manifest's root fixes every hash it read; recompute it from what is stored.
        if input_root((e.id, e.hash) for e in events.values()) != root:
            return SwitchFailure.INPUT_INVALIDATED, "an input's hash differs from the manifest's"
        # with a base: its conflicts, which no operation since changed, and the tail's own
        unresolved = sorted(c.id for c in state.unresolved if c.a in events and c.b in events)
        if base is not None:
            unresolved = sorted([*base.expected_conflicts, *unresolved])
        if unresolved != sorted(manifest.expected_conflicts):
            return SwitchFailure.NEW_CONFLICT, f"unresolved conflicts are now {unresolved}"
        return None

    @staticmethod
    def _redundant(
        artifact: Artifact, alias: Alias, published_manifest: str | None
    ) -> tuple[SwitchFailure, str] | None:
        """The alias already publishes this coverage at this epoch under the same budget
        (and is not bypassed): one publish per (coverage, epoch) unless forced.
        ``published_manifest``: the manifest of the alias's artifact, as stored."""
        m = artifact.manifest
        if (
            not alias.artifact_id
            or alias.bypassed
            or alias.source_epoch != m.input_epoch
            or alias.covers_through != m.new_covers_through
        ):
            return None
        if published_manifest is None or manifest_from_json(published_manifest).budget != m.budget:
            return None  # a summary under another budget is another summary
        return SwitchFailure.UP_TO_DATE, (
            f"{alias.artifact_id} already publishes coverage {alias.covers_through}"
            f" at epoch {alias.source_epoch}"
        )

    @staticmethod
    def _fail_other_candidates(
        tx: Tx, tenant: str, published: Artifact, took: str, took_params: tuple[str, ...]
    ) -> None:
        """Every other candidate of the subject expected an alias that is now gone for good
        (an alias never points back to an earlier artifact), so its CAS can no longer
        succeed: it fails now, with the reason, instead of lingering as a candidate (say,
        after its worker was killed between writing it and switching). ``took``: the
        condition that the CAS took."""
        tx.execute(
            "UPDATE artifact_status SET status = 'failed', reason = ?, status_at = ?"
            f" WHERE tenant = ? AND subject = ? AND status = 'candidate' AND id <> ?{took}",
            (
                f"{SwitchFailure.ALIAS_MOVED}: {published.id} was published before its switch",
                utc_now(),
                tenant,
                published.subject,
                published.id,
                *took_params,
            ),
        )

    @staticmethod
    def _predicted_cas(artifact: Artifact, current: Alias) -> tuple[SwitchFailure, str] | None:
        """Why the CAS would not take, from the alias read under the lock (every writer of
        an alias holds the subject's lock, so it cannot move before the CAS runs)."""
        m = artifact.manifest
        expected = m.expected_alias
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
        if m.new_covers_through < current.covers_through:
            return SwitchFailure.COVERAGE_REGRESSION, (
                f"covers_through {current.covers_through} > {m.new_covers_through}"
            )
        return None

    @staticmethod
    def _compare_and_swap(tx: Tx, tenant: str, artifact: Artifact) -> Any:
        """The seed's CAS on all three of parent, epoch and coverage, coverage monotone (I6);
        its cursor (a row count of 1: it took)."""
        m = artifact.manifest
        expected = m.expected_alias
        return tx.execute(
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

    @staticmethod
    def _set_status(
        tx: Tx, tenant: str, artifact: Artifact, status: ArtifactStatus, reason: str | None
    ) -> None:
        tx.execute(
            "UPDATE artifact_status SET status = ?, reason = ?, status_at = ?"
            " WHERE tenant = ? AND subject = ? AND id = ?",
            (str(status), reason, utc_now(), tenant, artifact.subject, artifact.id),
        )
