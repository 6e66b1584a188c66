-- memlineage schema 8: stored evaluation runs (configuration, timings, metrics), per tenant.
CREATE TABLE eval_runs (
    tenant       TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    finished_at  TEXT NOT NULL,
    passed       INTEGER NOT NULL,
    report       TEXT NOT NULL,  -- JSON: config, timings, metrics, per-subject results
    PRIMARY KEY (tenant, run_id)
);
