-- memlineage schema 4 (SQLite): validity over time.
-- Detected contradictions, versioned tenant policies, erasure.

-- The detection job's watermark (events with seq <= it were checked for contradictions)
-- and the trust policy version this subject's validity was last folded under.
ALTER TABLE clocks ADD COLUMN detected_through INTEGER NOT NULL DEFAULT 0;
ALTER TABLE clocks ADD COLUMN trust_policy INTEGER NOT NULL DEFAULT 1;
CREATE INDEX clocks_trust_policy ON clocks (tenant, trust_policy, subject);

-- Versioned per-tenant policies ('temporal', 'trust'); a new version is a new row.
CREATE TABLE policies (
    tenant       TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    body         TEXT    NOT NULL,  -- JSON
    reason       TEXT,
    recorded_at  TEXT    NOT NULL,
    PRIMARY KEY (tenant, name, version)
);

-- The keyed must-preserve items of every checked event: what a new event is compared
-- with. A derived index: an erased event's rows are deleted.
CREATE TABLE event_keys (
    tenant    TEXT    NOT NULL,
    subject   TEXT    NOT NULL,
    key       TEXT    NOT NULL,
    seq       INTEGER NOT NULL,
    event_id  TEXT    NOT NULL,
    item      TEXT    NOT NULL,  -- JSON: kind, value, unit, polarity, topic
    PRIMARY KEY (tenant, subject, key, seq, item)
);
CREATE INDEX event_keys_by_event ON event_keys (tenant, subject, event_id);

-- Who erased what and why (the event row keeps id, seq and hash; its content is gone).
CREATE TABLE erasures (
    tenant      TEXT    NOT NULL,
    subject     TEXT    NOT NULL,
    event_id    TEXT    NOT NULL,
    op_seq      INTEGER NOT NULL,
    erased_by   TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    erased_at   TEXT    NOT NULL,
    PRIMARY KEY (tenant, subject, event_id)
);

-- Detection reads the operations that name a few events, not the whole log.
CREATE INDEX operations_by_target ON operations (tenant, subject, target);
CREATE INDEX operations_by_other ON operations (tenant, subject, other);
