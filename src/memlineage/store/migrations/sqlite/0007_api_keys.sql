-- memlineage schema 7 (SQLite): API keys of the HTTP service, each scoped to one tenant.
-- Only a SHA-256 of the secret is kept; the secret is shown once, at creation.
CREATE TABLE api_keys (
    key_id      TEXT NOT NULL PRIMARY KEY,
    tenant      TEXT NOT NULL,
    secret_hash TEXT NOT NULL UNIQUE,
    label       TEXT,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
CREATE INDEX api_keys_by_tenant ON api_keys (tenant, key_id);
