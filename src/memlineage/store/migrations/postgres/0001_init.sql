-- memlineage schema 1 (PostgreSQL). Every table is keyed by (tenant, subject) first.
CREATE TABLE clocks (
    tenant      TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    high_water  BIGINT  NOT NULL DEFAULT 0,  -- H: largest seq (I1)
    epoch       BIGINT  NOT NULL DEFAULT 0,  -- bumped by every invalidating operation (I1)
    switches    BIGINT  NOT NULL DEFAULT 0,  -- bumped by every switch attempt (the lock, I7)
    ops         BIGINT  NOT NULL DEFAULT 0,  -- last operation seq
    PRIMARY KEY (tenant, subject)
);

CREATE TABLE aliases (
    tenant          TEXT    NOT NULL,
    subject         TEXT    NOT NULL,
    artifact_id     TEXT    NOT NULL DEFAULT '',
    source_epoch    BIGINT  NOT NULL DEFAULT 0,
    covers_through  BIGINT  NOT NULL DEFAULT 0,
    bypassed        BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (tenant, subject)
);

CREATE TABLE alias_history (
    tenant          TEXT    NOT NULL,
    subject         TEXT    NOT NULL,
    switch_no       BIGINT  NOT NULL,
    artifact_id     TEXT    NOT NULL,
    source_epoch    BIGINT  NOT NULL,
    covers_through  BIGINT  NOT NULL,
    switched_at     TEXT    NOT NULL,
    PRIMARY KEY (tenant, subject, switch_no)
);

CREATE TABLE events (
    tenant       TEXT    NOT NULL,
    subject      TEXT    NOT NULL,
    seq          BIGINT  NOT NULL,
    id           TEXT    NOT NULL,
    at           TEXT,
    kind         TEXT,
    project      TEXT,
    trust        TEXT    NOT NULL,
    taint        TEXT    NOT NULL,  -- JSON array
    facts        TEXT    NOT NULL,  -- JSON array
    supersedes   TEXT,
    text         TEXT    NOT NULL,
    hash         TEXT    NOT NULL,
    recorded_at  TEXT    NOT NULL,
    PRIMARY KEY (tenant, subject, seq),
    UNIQUE (tenant, id)
);

CREATE TABLE operations (
    tenant       TEXT    NOT NULL,
    subject      TEXT    NOT NULL,
    op_seq       BIGINT  NOT NULL,
    kind         TEXT    NOT NULL,
    target       TEXT    NOT NULL,
    other        TEXT,
    conflict_id  TEXT,
    key          TEXT,
    trust        TEXT,
    taint        TEXT,
    reason       TEXT,
    epoch        BIGINT  NOT NULL,
    recorded_at  TEXT    NOT NULL,
    PRIMARY KEY (tenant, subject, op_seq)
);
CREATE UNIQUE INDEX operations_conflict ON operations (tenant, conflict_id)
    WHERE conflict_id IS NOT NULL AND kind = 'conflict';

CREATE TABLE artifacts (
    tenant       TEXT NOT NULL,
    subject      TEXT NOT NULL,
    id           TEXT NOT NULL,
    status       TEXT NOT NULL,
    reason       TEXT,
    manifest     TEXT NOT NULL,  -- JSON
    output       TEXT,           -- JSON, NULL when generation or parsing failed
    gate         TEXT NOT NULL,  -- JSON
    created_at   TEXT NOT NULL,
    status_at    TEXT NOT NULL,
    PRIMARY KEY (tenant, subject, id),
    UNIQUE (tenant, id)
);

-- parent -> child: raw event -> artifact, parent artifact -> artifact.
CREATE TABLE derivation (
    tenant   TEXT NOT NULL,
    subject  TEXT NOT NULL,
    parent   TEXT NOT NULL,
    child    TEXT NOT NULL,
    PRIMARY KEY (tenant, subject, parent, child)
);
CREATE INDEX derivation_by_child ON derivation (tenant, subject, child, parent);
