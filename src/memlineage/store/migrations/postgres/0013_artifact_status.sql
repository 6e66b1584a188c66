-- memlineage schema 13 (PostgreSQL): an artifact's status in a narrow table of its own.

-- Staling rewrites the status of every descendant of an invalidated source in the
-- invalidating transaction (I7); kept beside the manifest and output, each status change
-- wrote a new version of the whole artifact row and of its index entries. The artifact
-- row is written once and changed only by erasure; its status, reason and time live
-- here, in pages left 30% free and under no index on what changes, so a status change
-- is a heap-only (HOT) update.
CREATE TABLE artifact_status (
    tenant     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    id         TEXT NOT NULL,
    status     TEXT NOT NULL,
    reason     TEXT,
    status_at  TEXT NOT NULL,
    PRIMARY KEY (tenant, subject, id)
) WITH (fillfactor = 70);
INSERT INTO artifact_status (tenant, subject, id, status, reason, status_at)
    SELECT tenant, subject, id, status, reason, status_at FROM artifacts;
-- The sweep finds a tenant's candidates in the narrow rows (tenant is the key's prefix).
DROP INDEX artifacts_candidates;
-- A dropped column stays in the rows it was written in: clear the reasons (they may quote
-- an event's text that an erasure must reach) before dropping them.
UPDATE artifacts SET reason = NULL WHERE reason IS NOT NULL;
ALTER TABLE artifacts DROP COLUMN status, DROP COLUMN reason, DROP COLUMN status_at;
