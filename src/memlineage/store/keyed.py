"""The versions of one keyed value: events whose ids share a prefix (the LangGraph store).

A key's value is a chain of events ``<prefix><version>``, each superseding the
one before (interfaces/langgraph.py). Reading one key must not cost the whole
subject: the versions come from one range of the ``(tenant, id)`` index, and
the verdict on the latest from the operations that name it (two index
lookups) and the subject's policy operations (a partial index, migration 0012).
"""

from __future__ import annotations

from memlineage.raw.validity import source_state
from memlineage.store.core import StoreCore
from memlineage.store.protocol import KeyVersions
from memlineage.store.rows import EVENT_COLUMNS, OP_COLUMNS, event_from_row, op_from_row


class KeyedMixin(StoreCore):
    # The comparison that orders ids by code point, as the range below needs.
    id_order: str = ""

    def key_versions(self, tenant: str, subject: str, prefix: str) -> KeyVersions:
        """The events of ``subject`` whose id is ``prefix`` followed by a version number."""
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)  # the first string past the prefix
        with self._read() as tx:
            rows = tx.all(
                f"SELECT {EVENT_COLUMNS} FROM events WHERE tenant = ?"
                f" AND id{self.id_order} >= ? AND id{self.id_order} < ? AND subject = ?"
                " ORDER BY seq",
                (tenant, prefix, upper, subject),
            )
            versions = [
                e for e in map(event_from_row, rows) if e.id[len(prefix) :].isdecimal()
            ]  # a key that extends this one ("a" and "a:1") shares the range
            if not versions:
                return KeyVersions((), False)
            latest = versions[-1].id
            ops = tx.all(
                f"SELECT {OP_COLUMNS} FROM operations WHERE tenant = ? AND subject = ?"
                " AND target = ? UNION"
                f" SELECT {OP_COLUMNS} FROM operations WHERE tenant = ? AND subject = ?"
                " AND other = ? UNION"
                f" SELECT {OP_COLUMNS} FROM operations WHERE tenant = ? AND subject = ?"
                " AND kind = 'policy'",
                (tenant, subject, latest) * 2 + (tenant, subject),
            )
        state = source_state([versions[-1]], [op_from_row(r) for r in ops], self.policy)
        return KeyVersions(tuple(versions), latest not in state.invalid)
