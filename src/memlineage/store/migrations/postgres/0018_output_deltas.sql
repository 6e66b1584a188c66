-- memlineage schema 18 (PostgreSQL): a summary's output may be stored as its base
-- artifact's output plus what changed (store/deltas.py; docs/storage.md, "Outputs
-- stored as a delta"). A base is always stored whole: a reader joins one more row.

-- NULL: the output column holds the whole output (or NULL: generation failed).
-- Else the output column holds the delta, over the output of artifact (tenant, base).
ALTER TABLE artifacts ADD COLUMN base TEXT;
