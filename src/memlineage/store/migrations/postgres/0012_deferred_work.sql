-- memlineage schema 12 (PostgreSQL): indexes for work that no longer follows the history.

-- The detection job's queue is its watermark: a worker finds the subjects whose events
-- are not all checked (detected_through < high_water) without scanning every clock.
CREATE INDEX clocks_undetected ON clocks (tenant, subject) WHERE detected_through < high_water;

-- One key of the LangGraph store is read without reading its subject: the subject's
-- policy operations without scanning its whole operation log, and a range of event ids
-- by code point (COLLATE "C", whatever the database's collation).
CREATE INDEX operations_policy ON operations (tenant, subject, op_seq) WHERE kind = 'policy';
CREATE INDEX events_id_code_points ON events (tenant, id COLLATE "C");
