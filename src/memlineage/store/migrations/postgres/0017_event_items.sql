-- memlineage schema 17 (PostgreSQL): every selected event's must-preserve items, as the
-- extraction rules of their version read them, so that a consolidation in a process
-- that never read the subject (another worker, a restart, the command line) extracts
-- only the events it has not seen stored (docs/storage.md, "Stored items").

-- A derived index, rebuilt from the event whenever it is missing or of other rules
-- (extract.RULES_VERSION); items hold clauses of the event's text, so an erasure
-- deletes the erased event's row in its own transaction.
CREATE TABLE event_items (
    tenant   TEXT    NOT NULL,
    subject  TEXT    NOT NULL,
    seq      BIGINT  NOT NULL,
    rules    INTEGER NOT NULL,
    items    TEXT    NOT NULL,  -- JSON: [[id, kind, key, value, unit, polarity, clause], ...]
    PRIMARY KEY (tenant, subject, seq)
);
