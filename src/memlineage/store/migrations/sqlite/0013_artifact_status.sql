-- memlineage schema 13 (SQLite): an artifact's status in a narrow table of its own.

-- Staling rewrites the status of every descendant of an invalidated source in the
-- invalidating transaction (I7); kept beside the manifest and output, each status change
-- rewrote the whole artifact row (and secure_delete zeroed the old one). The artifact
-- row is written once and changed only by erasure; its status, reason and time live here.
CREATE TABLE artifact_status (
    tenant     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    id         TEXT NOT NULL,
    status     TEXT NOT NULL,
    reason     TEXT,
    status_at  TEXT NOT NULL,
    PRIMARY KEY (tenant, subject, id)
);
INSERT INTO artifact_status (tenant, subject, id, status, reason, status_at)
    SELECT tenant, subject, id, status, reason, status_at FROM artifacts;
-- The sweep finds a tenant's candidates in the narrow rows (tenant is the key's prefix).
DROP INDEX artifacts_candidates;
ALTER TABLE artifacts DROP COLUMN status;
ALTER TABLE artifacts DROP COLUMN reason;
ALTER TABLE artifacts DROP COLUMN status_at;
