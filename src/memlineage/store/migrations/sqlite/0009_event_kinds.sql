-- memlineage schema 9 (SQLite): the item kinds of every event the detection job checked,
-- so that recall finds must-keep events without extracting them again (docs/recall.md).

-- kinds_through: event_kinds is complete up to this seq (an event without an item has no
-- row); kinds_rules: the extraction rules (extract.RULES_VERSION) its rows were written
-- with. 0 and 0 on a store from before: the detection job fills them in.
ALTER TABLE clocks ADD COLUMN kinds_through INTEGER NOT NULL DEFAULT 0;
ALTER TABLE clocks ADD COLUMN kinds_rules INTEGER NOT NULL DEFAULT 0;

-- A derived index that holds no text: an erased event's row is deleted.
CREATE TABLE event_kinds (
    tenant   TEXT    NOT NULL,
    subject  TEXT    NOT NULL,
    seq      INTEGER NOT NULL,
    kinds    TEXT    NOT NULL,  -- the distinct item kinds, sorted, comma-joined
    PRIMARY KEY (tenant, subject, seq)
);
