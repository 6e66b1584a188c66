-- memlineage schema 6: release per tenant (mode, versioned generator configurations) and
-- the shadow review queue. Configurations are append-only: a rollout adds a version.
CREATE TABLE release_state (
    tenant           TEXT NOT NULL PRIMARY KEY,
    mode             TEXT NOT NULL DEFAULT 'auto',   -- auto | shadow
    active_config    INTEGER,                        -- generator_configs.version in use
    previous_config  INTEGER,                        -- what a failed release falls back to
    updated_at       TEXT NOT NULL
);

CREATE TABLE generator_configs (
    tenant      TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    config      TEXT    NOT NULL,  -- JSON: generator, model, base_url, prompt, selector
    created_at  TEXT    NOT NULL,
    PRIMARY KEY (tenant, version)
);

CREATE TABLE release_log (
    tenant      TEXT NOT NULL,
    at          TEXT NOT NULL,
    action      TEXT NOT NULL,   -- mode, config, rollout, fail
    detail      TEXT NOT NULL    -- JSON
);
CREATE INDEX release_log_by_tenant ON release_log (tenant, at);

CREATE TABLE reviews (
    tenant       TEXT NOT NULL,
    subject      TEXT NOT NULL,
    artifact_id  TEXT NOT NULL,
    state        TEXT NOT NULL,   -- pending | approved | rejected | refused
    reviewer     TEXT,
    reason       TEXT,
    queued_at    TEXT NOT NULL,
    decided_at   TEXT,
    PRIMARY KEY (tenant, subject, artifact_id)
);
CREATE INDEX reviews_by_state ON reviews (tenant, state, queued_at);
