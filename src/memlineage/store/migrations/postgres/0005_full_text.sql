-- memlineage schema 5 (PostgreSQL): the full-text index over events (recall by query).
-- A generated tsvector column is computed in the very statement that inserts or
-- rewrites a row (erasure rewrites text in place), so the index is never behind the
-- raw layer. Configuration 'english' (Snowball stemming and stop words), measured
-- against 'simple' on LoCoMo (docs/recall.md). Lookups go by (tenant, subject) first
-- through the primary key and test the tsvector on that subject's rows only; the GIN
-- index serves searches that are not scoped to one subject (audit, operators).
ALTER TABLE events ADD COLUMN tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english'::regconfig, text)) STORED;

CREATE INDEX events_tsv ON events USING GIN (tsv);
