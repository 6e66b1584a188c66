-- memlineage schema 12 (SQLite): indexes for work that no longer follows the history.

-- The detection job's queue is its watermark: a worker finds the subjects whose events
-- are not all checked (detected_through < high_water) without scanning every clock.
CREATE INDEX clocks_undetected ON clocks (tenant, subject) WHERE detected_through < high_water;

-- One key of the LangGraph store is read without reading its subject: the subject's
-- policy operations without scanning its whole operation log (a range of event ids uses
-- the unique (tenant, id) index).
CREATE INDEX operations_policy ON operations (tenant, subject, op_seq) WHERE kind = 'policy';
