"""API keys of the HTTP service: one tenant per key, only a hash of the secret stored.

Keys are not subject data, so these transactions take no clock lock: nothing
they write is read by a consolidation.
"""

from __future__ import annotations

from memlineage.errors import NotFound
from memlineage.raw.ingest import utc_now
from memlineage.store.core import StoreCore


class KeysMixin(StoreCore):
    def insert_key(self, key_id: str, tenant: str, secret_hash: str, label: str | None) -> None:
        with self._write() as tx:
            tx.execute(
                "INSERT INTO api_keys (key_id, tenant, secret_hash, label, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (key_id, tenant, secret_hash, label, utc_now()),
            )

    def revoke_key(self, tenant: str, key_id: str) -> bool:
        """Revoke a key of ``tenant``; False when it was revoked already."""
        with self._write() as tx:
            row = tx.one(
                "SELECT revoked_at FROM api_keys WHERE tenant = ? AND key_id = ?",
                (tenant, key_id),
            )
            if row is None:
                raise NotFound(f"no key {key_id!r} in tenant {tenant!r}", field="key")
            if row[0] is not None:
                return False
            tx.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE tenant = ? AND key_id = ?",
                (utc_now(), tenant, key_id),
            )
            return True

    def list_keys(self, tenant: str) -> list[tuple[str, str | None, str, str | None]]:
        """(key_id, label, created_at, revoked_at) of every key of ``tenant``."""
        with self._read() as tx:
            rows = tx.all(
                "SELECT key_id, label, created_at, revoked_at FROM api_keys"
                " WHERE tenant = ? ORDER BY created_at, key_id",
                (tenant,),
            )
        return [(str(r[0]), r[1], str(r[2]), r[3]) for r in rows]

    def key_by_hash(self, secret_hash: str) -> tuple[str, str, str, bool] | None:
        """(key_id, tenant, stored hash, revoked) of the key whose secret hashes to this."""
        with self._read() as tx:
            row = tx.one(
                "SELECT key_id, tenant, secret_hash, revoked_at FROM api_keys"
                " WHERE secret_hash = ?",
                (secret_hash,),
            )
        if row is None:
            return None
        return str(row[0]), str(row[1]), str(row[2]), row[3] is not None
