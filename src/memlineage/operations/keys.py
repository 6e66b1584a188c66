"""API keys for the HTTP service: created, listed, revoked, verified.

A key is ``mlk_<key id>_<secret>``. The store keeps the SHA-256 of the whole
key, never the key; a fast hash is right here because the secret has 256
bits of entropy (a password hash is for low-entropy secrets). The lookup is
by hash and the final comparison is constant-time, so a timing difference
tells an attacker nothing about a stored key.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from memlineage.errors import BadInput
from memlineage.store.protocol import KeyStore

PREFIX = "mlk"


@dataclass(frozen=True)
class ApiKey:
    key_id: str
    tenant: str
    label: str | None
    created_at: str
    revoked_at: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "key_id": self.key_id,
            "tenant": self.tenant,
            "label": self.label,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def create_key(store: KeyStore, tenant: str, label: str | None = None) -> tuple[str, str]:
    """A new key for ``tenant``: returns (key_id, key). The key is shown only here."""
    if not tenant.strip():
        raise BadInput("must not be empty", field="tenant")
    key_id = secrets.token_hex(6)
    key = f"{PREFIX}_{key_id}_{secrets.token_urlsafe(32)}"
    store.insert_key(key_id, tenant, hash_key(key), label)
    return key_id, key


def list_keys(store: KeyStore, tenant: str) -> list[ApiKey]:
    return [
        ApiKey(k, tenant, label, at, revoked) for k, label, at, revoked in store.list_keys(tenant)
    ]


def revoke_key(store: KeyStore, tenant: str, key_id: str) -> bool:
    return store.revoke_key(tenant, key_id)


def key_of(store: KeyStore, key: str) -> tuple[str, str] | None:
    """(key id, tenant) of a presented key, or None for a missing, unknown or revoked key."""
    if not key.startswith(f"{PREFIX}_"):
        return None
    presented = hash_key(key)
    found = store.key_by_hash(presented)
    if found is None:
        return None
    key_id, tenant, stored, revoked = found
    if not hmac.compare_digest(stored, presented) or revoked:
        return None
    return key_id, tenant


def tenant_of(store: KeyStore, key: str) -> str | None:
    """The tenant a presented key belongs to, or None for a missing, unknown or revoked key."""
    found = key_of(store, key)
    return None if found is None else found[1]


def key_active(store: KeyStore, tenant: str, key_id: str) -> bool:
    """True while the key ``key_id`` of ``tenant`` exists and is not revoked."""
    return any(k == key_id and revoked is None for k, _, _, revoked in store.list_keys(tenant))
