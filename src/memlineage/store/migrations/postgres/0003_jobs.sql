-- memlineage schema 3 (PostgreSQL): the consolidation job queue.
-- One row per (tenant, subject): triggers coalesce into it, so at most one
-- consolidation per subject is queued or running. Times are seconds since the
-- Unix epoch on the database's clock, the one clock every worker shares.
CREATE TABLE jobs (
    tenant         TEXT              NOT NULL,
    subject        TEXT              NOT NULL,
    state          TEXT              NOT NULL,  -- queued, running, done, dead
    reason         TEXT              NOT NULL,  -- the triggers that queued it: tail,stale,manual,schedule
    detail         TEXT,                         -- the latest trigger's detail (e.g. "revoke of m-2")
    force          BOOLEAN           NOT NULL DEFAULT FALSE,
    rerun          BOOLEAN           NOT NULL DEFAULT FALSE,  -- triggered while running: run again
    due            DOUBLE PRECISION  NOT NULL,  -- queued: runnable from, running: the lease end
    attempts       INTEGER           NOT NULL DEFAULT 0,
    token          BIGINT            NOT NULL DEFAULT 0,  -- the fencing token, +1 per claim
    lease_owner    TEXT,
    queued_at      DOUBLE PRECISION  NOT NULL,
    started_at     DOUBLE PRECISION,
    finished_at    DOUBLE PRECISION,
    last_error     TEXT,
    last_outcome   TEXT,
    last_artifact  TEXT,
    PRIMARY KEY (tenant, subject)
);
CREATE INDEX jobs_runnable ON jobs (due) WHERE state IN ('queued', 'running');
CREATE INDEX jobs_runnable_by_tenant ON jobs (tenant, due) WHERE state IN ('queued', 'running');

-- Per-tenant trigger settings, no row means the defaults.
CREATE TABLE job_settings (
    tenant          TEXT     NOT NULL PRIMARY KEY,
    tail_threshold  INTEGER  NOT NULL  -- queue when the unconsolidated tail exceeds it, 0: off
);

-- The switch fails every other candidate of its subject (their CAS can no longer succeed).
CREATE INDEX artifacts_candidates ON artifacts (tenant, subject) WHERE status = 'candidate';
