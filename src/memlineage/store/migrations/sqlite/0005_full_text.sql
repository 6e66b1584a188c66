-- memlineage schema 5 (SQLite): the full-text index over events (recall by query).
-- FTS5, contentless (the text lives once, in events), keyed by the events rowid.
-- "scope" holds one token per (tenant, subject): hex of tenant, U+001F, subject, then
-- '0' (so no stemmer suffix rule can touch it); every lookup matches it first, so a
-- query reads one subject's postings, never the whole tenant's. Ranked by bm25() with
-- weight 0 on scope. Tokenizer: Porter stemming over unicode61 without diacritics,
-- the counterpart of PostgreSQL's 'english' configuration (docs/recall.md).
-- Triggers keep the index in the raw layer's own transactions: an insert indexes the
-- event; a rewrite of its text (erasure) replaces its terms; a delete removes them.
CREATE VIRTUAL TABLE events_fts USING fts5(
    scope, text, content = '', tokenize = 'porter unicode61 remove_diacritics 2'
);

INSERT INTO events_fts (rowid, scope, text)
    SELECT rowid, hex(tenant || char(31) || subject) || '0', text FROM events;

CREATE TRIGGER events_fts_insert AFTER INSERT ON events BEGIN
    INSERT INTO events_fts (rowid, scope, text)
        VALUES (new.rowid, hex(new.tenant || char(31) || new.subject) || '0', new.text);
END;

CREATE TRIGGER events_fts_update AFTER UPDATE OF text ON events BEGIN
    INSERT INTO events_fts (events_fts, rowid, scope, text)
        VALUES ('delete', old.rowid, hex(old.tenant || char(31) || old.subject) || '0', old.text);
    INSERT INTO events_fts (rowid, scope, text)
        VALUES (new.rowid, hex(new.tenant || char(31) || new.subject) || '0', new.text);
END;

CREATE TRIGGER events_fts_delete AFTER DELETE ON events BEGIN
    INSERT INTO events_fts (events_fts, rowid, scope, text)
        VALUES ('delete', old.rowid, hex(old.tenant || char(31) || old.subject) || '0', old.text);
END;
