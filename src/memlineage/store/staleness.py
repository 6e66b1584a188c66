"""Staleness: every artifact whose derivation reaches an invalidated source goes stale.

Called inside the invalidating operation's transaction, after its clock lock
(I7), so the artifact leaves recall at the same commit that invalidates its
source.
"""

from __future__ import annotations

from collections.abc import Sequence

from memlineage.raw.ingest import utc_now
from memlineage.store.sql import Tx, marks

# Artifacts that a newly invalidated source takes out of use; rejected and
# failed ones were never usable and keep the status that says why.
STALEABLE = ("candidate", "published", "superseded")


def mark_descendants_stale(
    tx: Tx,
    tenant: str,
    subject: str,
    roots: Sequence[str],
    reason: str,
    prelude: str | None = None,
) -> tuple[str, ...]:
    """Every artifact reachable from ``roots`` along derivation edges becomes stale.

    UNION (not UNION ALL) visits each node once however many paths reach it,
    so the cost follows the number of descendants, not the paths.
    """
    if prelude:
        tx.execute(prelude)
    rows = tx.all(
        "WITH RECURSIVE below(node) AS ("
        f" SELECT child FROM derivation WHERE tenant = ? AND subject = ?"
        f" AND parent IN ({marks(len(roots))})"
        " UNION"
        " SELECT d.child FROM derivation d JOIN below b ON d.parent = b.node"
        " WHERE d.tenant = ? AND d.subject = ?)"
        " UPDATE artifact_status SET status = 'stale', reason = ?, status_at = ?"
        " WHERE tenant = ? AND subject = ? AND id IN (SELECT node FROM below)"
        f" AND status IN ({marks(len(STALEABLE))}) RETURNING id",
        (
            tenant,
            subject,
            *roots,
            tenant,
            subject,
            reason,
            utc_now(),
            tenant,
            subject,
            *STALEABLE,
        ),
    )
    return tuple(sorted(r[0] for r in rows))
