"""Erasure (data protection): tombstone an event's content, scrub every derived copy.

One transaction, the subject's clock lock first (I7):

1. the event row keeps id, seq and hash; its ``text`` becomes the tombstone and
   its facts are emptied. The text is updated *in place*, so a full-text index
   kept by triggers on ``events.text`` (or a generated column over it) follows
   in the same transaction;
2. an ``erase`` operation (who and why also go to ``erasures``) advances the
   epoch and makes the event invalid for good; what derives from it goes stale;
3. every artifact of the subject loses the claims and statements derived from
   the event and every other copy of its content (outputs, manifests, gate
   reports, reasons); the detection index forgets its items and their kinds,
   the embeddings its vector; operations whose key was read from its text lose
   the key.

Then the backend purges what the database keeps of old row versions (SQLite:
``secure_delete`` zeroes freed space, and a WAL checkpoint truncates the log;
PostgreSQL: see docs/concepts.md on VACUUM), and this process empties every
cache that may hold a copy of the text (meaning/caches.py).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from memlineage.errors import BadInput
from memlineage.meaning import caches
from memlineage.model import OpKind
from memlineage.raw.ingest import utc_now
from memlineage.store import deltas
from memlineage.store import scrub as erasure
from memlineage.store.core import StoreCore
from memlineage.store.protocol import Erased
from memlineage.store.reader import SqlReader
from memlineage.store.rows import base_output, dumps
from memlineage.store.sql import Tx


class EraseMixin(StoreCore):
    def erase(self, tenant: str, event_id: str, reason: str, erased_by: str) -> Erased:
        """Erase an event's content everywhere; its id, seq and hash stay.

        The purge of old row versions runs after the commit, also when the event was
        erased already: erasing again finishes a purge a full disk or a reader stopped.
        """
        done = self._erase_rows(tenant, event_id, reason, erased_by)
        purged = self._purge_erased()
        caches.clear_all()  # what this process remembered of the text (meaning/caches.py)
        return replace(done, purged=purged)

    def _erase_rows(self, tenant: str, event_id: str, reason: str, erased_by: str) -> Erased:
        if not reason.strip():
            raise BadInput("an erasure needs a reason", field="reason")
        if not erased_by.strip():
            raise BadInput("an erasure needs to say who asked", field="by")
        subject = self._subject_of(tenant, event_id)
        self._prepare_erasure()
        with self._write() as tx:
            clock = self._lock_clock(tx, tenant, subject)
            assert clock is not None
            if tx.one(
                "SELECT 1 FROM erasures WHERE tenant = ? AND subject = ? AND event_id = ?",
                (tenant, subject, event_id),
            ):
                return Erased(event_id, subject, clock.epoch, changed=False)
            (event,) = SqlReader(tx, tenant).events_by_id(subject, [event_id])
            found = self._erased_pattern(tx, tenant, subject, event)
            reason = erasure.scrub(reason, found)  # a reason may quote what it erases
            tx.execute(
                "UPDATE events SET text = ?, facts = '[]', speaker = NULL"
                " WHERE tenant = ? AND subject = ? AND id = ?",
                (erasure.TOMBSTONE, tenant, subject, event_id),
            )
            result = self._record_invalidation(
                tx, tenant, subject, OpKind.ERASE, event_id, reason=reason, invalidates=event_id
            )
            tx.execute(
                "INSERT INTO erasures (tenant, subject, event_id, op_seq, erased_by, reason,"
                " erased_at) VALUES (?, ?, ?, (SELECT ops FROM clocks WHERE tenant = ?"
                " AND subject = ?), ?, ?, ?)",
                (tenant, subject, event_id, tenant, subject, erased_by, reason, utc_now()),
            )
            tx.execute(
                "DELETE FROM event_keys WHERE tenant = ? AND subject = ? AND event_id = ?",
                (tenant, subject, event_id),
            )
            tx.execute(  # no text, but derived from it; the event is invalid for good anyway
                "DELETE FROM event_kinds WHERE tenant = ? AND subject = ? AND seq = ?",
                (tenant, subject, event.seq),
            )
            tx.execute(  # an item holds a clause of the text (schema 17)
                "DELETE FROM event_items WHERE tenant = ? AND subject = ? AND seq = ?",
                (tenant, subject, event.seq),
            )
            tx.execute(  # a vector is derived from the text (the embedding job skips it)
                "DELETE FROM event_vectors WHERE tenant = ? AND subject = ? AND seq = ?",
                (tenant, subject, event.seq),
            )
            tx.execute(
                "UPDATE operations SET key = ? WHERE tenant = ? AND subject = ?"
                " AND (target = ? OR other = ?) AND key IS NOT NULL AND kind <> 'policy'",
                (erasure.TOMBSTONE, tenant, subject, event_id, event_id),
            )
            scrubbed = self._scrub_artifacts(tx, tenant, subject, event_id, found)
            self._scrub_operations_rows(tx, tenant, subject, found)
        return Erased(event_id, subject, result.epoch, True, result.stale, scrubbed)

    def _scrub_artifacts(
        self, tx: Tx, tenant: str, subject: str, event_id: str, found: Any
    ) -> tuple[str, ...]:
        """Rewrite every artifact row of the subject that holds a copy of the content.

        An output stored as a delta (schema 18) is stored whole from now on: its base
        may lose entries, and a delta names the base's entries by position. Every row
        is read before the first is rewritten, so each delta is made whole on its base
        as it was."""
        changed: list[str] = []
        rows = tx.all(
            f"SELECT a.id, s.reason, a.manifest, a.output, a.gate, a.base, {base_output()}"
            " FROM artifacts a JOIN artifact_status s ON s.tenant = a.tenant"
            " AND s.subject = a.subject AND s.id = a.id WHERE a.tenant = ? AND a.subject = ?",
            (tenant, subject),
        )
        bases: dict[str, Any] = {}  # a base's parse, shared by its deltas
        for artifact_id, reason, manifest, output, gate, base, base_text in rows:
            stored = json.loads(output) if output else None
            if stored is not None and base is not None:
                if base not in bases:
                    bases[base] = json.loads(base_text)
                stored = deltas.materialise_json(stored, bases[base])
            new_output = (
                dumps(erasure.scrub_output(stored, event_id, found)) if stored is not None else None
            )
            new_manifest = dumps(erasure.scrub(json.loads(manifest), found))
            new_gate = dumps(erasure.scrub(json.loads(gate), found))
            new_reason = erasure.scrub(reason, found)
            same = (new_output, new_manifest, new_gate, new_reason) == (
                dumps(stored) if stored is not None else None,
                dumps(json.loads(manifest)),
                dumps(json.loads(gate)),
                reason,
            )
            if same and base is None:
                continue
            key = (tenant, subject, artifact_id)
            tx.execute(
                "UPDATE artifacts SET output = ?, manifest = ?, gate = ?, base = NULL"
                " WHERE tenant = ? AND subject = ? AND id = ?",
                (new_output, new_manifest, new_gate, *key),
            )
            if new_reason != reason:
                tx.execute(
                    "UPDATE artifact_status SET reason = ? WHERE tenant = ? AND subject = ?"
                    " AND id = ?",
                    (new_reason, *key),
                )
            if not same:
                changed.append(artifact_id)
        return tuple(sorted(changed))

    @staticmethod
    def _erased_pattern(tx: Tx, tenant: str, subject: str, event: Any) -> Any:
        """What to scrub: the event's pieces, and its words no other event of the subject uses."""
        others = tx.all(
            "SELECT text FROM events WHERE tenant = ? AND subject = ? AND id <> ?",
            (tenant, subject, event.id),
        )
        own = erasure.own_words(event.text, (str(r[0]) for r in others))
        return erasure.pattern(erasure.needles(event), own)

    def _scrub_operations_rows(self, tx: Tx, tenant: str, subject: str, found: Any) -> None:
        """Free text outside artifacts: reasons quoting the content (a revoke's, a review's,
        an erasure's), declared conflict keys, a job's last error (a generator's message may
        quote its input), and saved evaluation reports (they quote values)."""
        for table, column, only in (
            ("operations", "reason", ""),
            ("operations", "key", " AND kind <> 'policy'"),  # a policy's key is its name
            ("erasures", "reason", ""),
            ("reviews", "reason", ""),
            ("jobs", "last_error", ""),
        ):
            self._scrub_column(tx, tenant, subject, table, column, found, only)
        for run_id, report in tx.all(
            "SELECT run_id, report FROM eval_runs WHERE tenant = ?", (tenant,)
        ):
            cleaned = dumps(erasure.scrub(json.loads(report), found))
            if cleaned != dumps(json.loads(report)):
                tx.execute(
                    "UPDATE eval_runs SET report = ? WHERE tenant = ? AND run_id = ?",
                    (cleaned, tenant, run_id),
                )

    @staticmethod
    def _scrub_column(
        tx: Tx, tenant: str, subject: str, table: str, column: str, found: Any, only: str = ""
    ) -> None:
        """Free-text reasons may quote the content too (a user's revoke reason, say)."""
        for (text,) in tx.all(
            f"SELECT DISTINCT {column} FROM {table} WHERE tenant = ? AND subject = ?"
            f" AND {column} IS NOT NULL{only}",
            (tenant, subject),
        ):
            cleaned = erasure.scrub(text, found)
            if cleaned != text:
                tx.execute(
                    f"UPDATE {table} SET {column} = ? WHERE tenant = ? AND subject = ?"
                    f" AND {column} = ?{only}",
                    (cleaned, tenant, subject, text),
                )

    def _prepare_erasure(self) -> None:
        """Backend hook before the erasing transaction (SQLite: zero freed space)."""

    def _purge_erased(self) -> bool:
        """Backend hook after it: drop old row versions from the files if the backend can."""
        return False
