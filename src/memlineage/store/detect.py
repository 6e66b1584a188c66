"""Contradictions over time, recorded by the raw layer: the detection job, and dismissal.

Detection runs as a job after the append, in a transaction of its own (the
subject's clock lock first, I7), not inside the append's: extracting an
event's must-preserve items costs many times a plain append (see
docs/benchmarks.md). ``clocks.detected_through`` is the job's watermark and
its queue: a worker takes a subject that is behind (``detect_next``), every
consolidation catches its subject up first, and every switch does under its
lock (``_catch_up_detection``), so no summary is switched over unchecked
events. A run is idempotent and a crash loses nothing.

A detected conflict is the same operation as a declared one (it names both
events and the key, bumps the epoch); its ``reason`` names the rule. The
tenant's temporal policy then keeps it unresolved or resolves it for the newer
``at`` with a resolution that names the rule and the policy version.

The job also stores the item kinds of every event it checks (``event_kinds``,
complete up to ``clocks.kinds_through``), which it extracts anyway: recall
reads them to find must-keep events instead of extracting again (docs/recall.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from memlineage.errors import NotFound
from memlineage.meaning import binding, extract
from memlineage.meaning.contradictions import Detected, KeyedItem, detect, keyed_items, latest
from memlineage.meaning.policy import LATEST_WINS, TemporalPolicy
from memlineage.model import Event, OpKind
from memlineage.progress import Advance
from memlineage.store.detect_run import DetectionRun
from memlineage.store.policies import PoliciesMixin
from memlineage.store.protocol import DetectedConflict, Detection, OpResult
from memlineage.store.reader import SqlReader
from memlineage.store.sql import Tx

RUN_CHUNK = 1_000  # events whose items are extracted, and rows written, at a time
DETECTED = "detected: "  # the reason prefix of a detected conflict's operation


# Events whose item kinds one step of a catch-up reads and stores (bounds its memory).
KINDS_BATCH = 1000


class DetectionMixin(PoliciesMixin):
    def detect_conflicts(
        self, tenant: str, subject: str, checked: Advance | None = None
    ) -> Detection:
        """Check every event after the watermark against the valid earlier items.

        ``checked`` is called with 1 after each event (a progress bar's count).
        """
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            if clock is None:
                raise NotFound(f"no subject {subject!r}", field="subject")
            return self._detect_locked(tx, tenant, subject, clock.high_water, checked)

    def detect_next(
        self, tenant: str | None, after: tuple[str, str] | None = None
    ) -> Detection | None:
        """The detection job of one subject with unchecked events; None when there is none.

        The transaction's first statement takes the clock row lock of a subject
        whose watermark is behind (I7); PostgreSQL skips the rows other workers
        hold. Subjects after ``after`` (tenant, subject) come first, so a busy
        subject does not keep the others waiting.
        """
        if not self._any_undetected(tenant):  # a worker asks between jobs: one round trip
            return None
        with self._write() as tx:
            row = self._lock_undetected(tx, tenant, after)
            if row is None and after is not None:
                row = self._lock_undetected(tx, tenant, None)
            if row is None:
                return None
            found = self._detect_locked(tx, str(row[0]), str(row[1]), int(row[2]))
            return replace(found, tenant=str(row[0]))

    def _any_undetected(self, tenant: str | None) -> bool:
        """Whether any subject (of ``tenant``) has unchecked events, in one statement."""
        where, params = ("AND tenant = ?", [tenant]) if tenant is not None else ("", [])
        with self._one_statement(read_only=True) as tx:
            row = tx.one(
                f"SELECT EXISTS (SELECT 1 FROM clocks WHERE detected_through < high_water {where})",
                params,
            )
        return bool(row[0])

    def _lock_undetected(
        self, tx: Tx, tenant: str | None, after: tuple[str, str] | None
    ) -> Sequence[Any] | None:
        where = "detected_through < high_water"
        params: list[Any] = []
        if tenant is not None:
            where += " AND tenant = ?"
            params.append(tenant)
        if after is not None:
            where += " AND (tenant, subject) > (?, ?)"
            params += list(after)
        row: Sequence[Any] | None = tx.one(
            "UPDATE clocks SET switches = switches WHERE (tenant, subject) ="
            f" (SELECT tenant, subject FROM clocks WHERE {where}"
            f" ORDER BY tenant, subject LIMIT 1{self.claim_lock})"
            " RETURNING tenant, subject, high_water",
            params,
        )
        return row

    def _catch_up_detection(self, tx: Tx, tenant: str, subject: str, high_water: int) -> bool:
        """Under the subject's lock: run the detection job if events are unchecked.

        True when it had events to check (the caller re-reads the epoch: a
        conflict it recorded bumped it).
        """
        row = tx.one(
            "SELECT detected_through FROM clocks WHERE tenant = ? AND subject = ?",
            (tenant, subject),
        )
        if row is None or int(row[0]) >= high_water:
            return False
        self._detect_locked(tx, tenant, subject, high_water)
        return True

    def _detect_locked(
        self, tx: Tx, tenant: str, subject: str, high_water: int, checked: Advance | None = None
    ) -> Detection:
        """The detection job in ``tx``, which holds the subject's clock lock already."""
        detected, kinds_done, kinds_rules = tx.one(
            "SELECT detected_through, kinds_through, kinds_rules FROM clocks"
            " WHERE tenant = ? AND subject = ?",
            (tenant, subject),
        )
        through = int(detected)
        self._catch_up_kinds(tx, tenant, subject, through, int(kinds_done), int(kinds_rules))
        if through >= high_water:
            return Detection(subject, through)
        temporal = self._temporal_policy(tx, tenant)
        found: list[DetectedConflict] = []
        events = SqlReader(tx, tenant).events(subject, after=through, through=high_water)
        run = DetectionRun(tx, tenant, subject, through + 1, by_code_point=self._code_points)
        run.know_events(events)
        for start in range(0, len(events), RUN_CHUNK):
            found += self._detect_chunk(run, events[start : start + RUN_CHUNK], temporal, checked)
        self._store_kinds(tx, tenant, subject, events, high_water)
        tx.execute(
            "UPDATE clocks SET detected_through = ? WHERE tenant = ? AND subject = ?",
            (high_water, tenant, subject),
        )
        return Detection(subject, high_water, tuple(found))

    @property
    def _code_points(self) -> str:
        """The COLLATE clause that orders text by code point, as SQLite does by default."""
        return ' COLLATE "C"' if self.dialect == "postgres" else ""

    def _detect_chunk(
        self,
        run: DetectionRun,
        events: Sequence[Event],
        temporal: TemporalPolicy,
        checked: Advance | None,
    ) -> list[DetectedConflict]:
        """Check a chunk of a run's events in seq order; one read of the windows it needs."""
        items_of = [(event, keyed_items(event)) for event in events]
        run.read_windows(i.key for _, items in items_of for i in items)
        found: list[DetectedConflict] = []
        for event, items in items_of:
            found += self._detect_one(run, event, items, temporal)
            if checked is not None:
                checked(1)
        run.write_keys()
        return found

    def _detect_one(
        self, run: DetectionRun, event: Event, items: Sequence[KeyedItem], temporal: TemporalPolicy
    ) -> list[DetectedConflict]:
        """Index one event's keyed items; the conflicts they make with earlier ones."""
        if not items:
            return []
        earlier = run.earlier(items)
        run.remember(event, items)
        if not earlier:
            return []
        return self._record_detected(run, items, earlier, temporal)

    def _record_detected(
        self,
        run: DetectionRun,
        items: Sequence[KeyedItem],
        earlier: Sequence[KeyedItem],
        temporal: TemporalPolicy,
    ) -> list[DetectedConflict]:
        new_id = items[0].event_id
        ids = sorted({i.event_id for i in earlier} | {new_id})
        state = run.verdict(ids, self.policy)
        if new_id in state.invalid:
            return []  # a quarantined or replaced event asserts nothing
        known = {frozenset((c.a, c.b)) for c in state.conflicts.values()}
        valid = [i for i in earlier if i.event_id not in state.invalid]
        out: list[DetectedConflict] = []
        for found in detect(items, valid):
            pair = frozenset((found.earlier.event_id, found.newer.event_id))
            if pair in known:
                continue
            known.add(pair)
            out.append(self._record_one(run.tx, run.tenant, run.subject, found, temporal))
            run.forget_ops(pair)  # its conflict (and resolution) name both events
        return out

    def _record_one(
        self, tx: Tx, tenant: str, subject: str, found: Detected, temporal: TemporalPolicy
    ) -> DetectedConflict:
        a, b = found.earlier.event_id, found.newer.event_id
        kind = found.kind
        conflict = self._record_invalidation(
            tx, tenant, subject, OpKind.CONFLICT, a, other=b, key=found.newer.key,
            reason=f"{DETECTED}{found.rule}",
        )  # fmt: skip
        assert conflict.conflict_id is not None
        if temporal.rule_for(kind) != LATEST_WINS:
            return DetectedConflict(
                conflict.conflict_id, a, b, found.newer.key, found.rule, kind, "keep", None, ()
            )
        winner = latest(found)
        loser = a if winner == b else b
        rule_name = temporal.rule_name(kind)
        resolved = self._record_invalidation(
            tx, tenant, subject, OpKind.RESOLVE, loser, other=winner,
            conflict_id=conflict.conflict_id, reason=rule_name, invalidates=loser,
        )  # fmt: skip
        return DetectedConflict(
            conflict.conflict_id, a, b, found.newer.key, found.rule, kind, rule_name, winner,
            resolved.stale,
        )  # fmt: skip

    def _resolved_by_policy(self, tx: Tx, tenant: str, subject: str, conflict_id: str) -> bool:
        """The conflict's last resolution was the temporal policy's: a user may overturn it."""
        row = tx.one(
            "SELECT reason FROM operations WHERE tenant = ? AND subject = ? AND conflict_id = ?"
            " AND kind = 'resolve' ORDER BY op_seq DESC LIMIT 1",
            (tenant, subject, conflict_id),
        )
        return bool(row and row[0] and str(row[0]).startswith(f"{LATEST_WINS} for "))

    def dismiss_conflict(
        self, tenant: str, conflict_id: str, reason: str | None = None
    ) -> OpResult:
        """Take a conflict back (detected or declared): both sides count again."""
        subject, a, b = self._conflict_sides(tenant, conflict_id)
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            assert clock is not None
            if conflict_id not in self._state(tx, tenant, subject, [a, b]).conflicts:
                return OpResult(subject, clock.epoch, False, conflict_id=conflict_id)
            return self._record_invalidation(
                tx, tenant, subject, OpKind.DISMISS, a, other=b, conflict_id=conflict_id,
                reason=reason,
            )  # fmt: skip

    def pending_detection(self, tenant: str) -> list[str]:
        """Subjects with events the detection job has not checked yet (after a crash), or
        whose item kinds it has not stored (a store from before, or older extraction rules)."""
        with self._read() as tx:
            rows = tx.all(
                "SELECT subject FROM clocks WHERE tenant = ? AND (detected_through < high_water"
                " OR kinds_through < high_water OR kinds_rules <> ?) ORDER BY subject",
                (tenant, extract.RULES_VERSION),
            )
        return [r[0] for r in rows]

    # -- the item kinds recall reads (docs/recall.md) --

    def _catch_up_kinds(
        self, tx: Tx, tenant: str, subject: str, through: int, done: int, rules: int
    ) -> None:
        """Store the kinds of the events detection checked before they were stored.

        ``done`` and ``rules`` are the clock's kinds watermark and rules version.
        That is a store migrated from schema 8, or kinds of older extraction rules
        (all rebuilt); conflicts are not detected again. Nothing to do once caught up.
        """
        if rules != extract.RULES_VERSION:
            tx.execute(
                "DELETE FROM event_kinds WHERE tenant = ? AND subject = ?", (tenant, subject)
            )
            done = 0
        reader = SqlReader(tx, tenant)
        while done < through:
            upto = min(done + KINDS_BATCH, through)
            events = reader.events(subject, after=done, through=upto)
            self._store_kinds(tx, tenant, subject, events, upto)
            done = upto

    def _store_kinds(
        self, tx: Tx, tenant: str, subject: str, events: Sequence[Event], through: int
    ) -> None:
        """Store the item kinds of ``events``, the ones after the watermark up to ``through``."""
        rows: list[tuple[str, str, int, str]] = []
        for event in events:
            kinds = binding.event_kinds(event)
            if kinds:
                rows.append((tenant, subject, event.seq, ",".join(kinds)))
        tx.insert_rows("event_kinds", "tenant, subject, seq, kinds", rows)
        tx.execute(
            "UPDATE clocks SET kinds_through = ?, kinds_rules = ? WHERE tenant = ? AND subject = ?",
            (through, extract.RULES_VERSION, tenant, subject),
        )
