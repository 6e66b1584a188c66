-- memlineage schema 12 (SQLite): indexes for work that no longer follows the history.

-- The detection job's queue is its watermark: a worker finds the subjects whose events
-- are not all checked (detected_through < high_water) without scanning every clock.
CREATE INDEX clocks_undetected ON clocks (tenant, subject) WHERE detected_through < high_water;
