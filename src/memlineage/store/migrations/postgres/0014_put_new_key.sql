-- memlineage schema 14 (PostgreSQL): the put of a new key in one statement.
-- A LangGraph put of a key its subject has no event of (store/keyed.py) runs the same
-- steps as the transaction of SqlStore.write_key, here on the server: the subject's
-- clock lock first (I7), the key's range read under it (a fresh snapshot per statement
-- at READ COMMITTED), the event at the new high_water and the tail trigger
-- (triggers.queue_tails and _enqueue_sql with reason 'tail', as one upsert).
-- It returns the event's seq, or NULL, having changed nothing, when the put is not of
-- that kind: a subject without events (its alias and policies start with its first
-- event), or any event in the key's range (a version, or a key extending this one).
-- The caller then runs the general path. SQLite has no server functions: its put runs
-- the general path's statements in its own process.
CREATE FUNCTION memlineage_put_new_key(
    p_tenant TEXT, p_subject TEXT, p_prefix TEXT, p_upper TEXT, p_id TEXT, p_at TEXT,
    p_kind TEXT, p_project TEXT, p_trust TEXT, p_taint TEXT, p_facts TEXT, p_text TEXT,
    p_hash TEXT, p_recorded_at TEXT, p_speaker TEXT, p_default_threshold INTEGER
) RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_seq BIGINT;
    covers BIGINT;
    threshold INTEGER;
    tail BIGINT;
    now_s DOUBLE PRECISION := CAST(EXTRACT(EPOCH FROM now()) AS DOUBLE PRECISION);
BEGIN
    -- The lock is the high-water bump; a put that turns out not to be of a new key
    -- puts it back (the lock is held until the transaction ends either way).
    UPDATE clocks SET high_water = high_water + 1
        WHERE tenant = p_tenant AND subject = p_subject AND high_water > 0
        RETURNING high_water INTO v_seq;
    IF v_seq IS NULL THEN
        RETURN NULL;
    END IF;
    IF EXISTS (SELECT 1 FROM events WHERE tenant = p_tenant AND id COLLATE "C" >= p_prefix
               AND id COLLATE "C" < p_upper AND subject = p_subject) THEN
        UPDATE clocks SET high_water = v_seq - 1 WHERE tenant = p_tenant AND subject = p_subject;
        RETURN NULL;
    END IF;
    INSERT INTO events (tenant, seq, id, subject, at, kind, project, trust, taint, facts,
                        supersedes, text, hash, recorded_at, speaker)
        VALUES (p_tenant, v_seq, p_id, p_subject, p_at, p_kind, p_project, p_trust, p_taint,
                p_facts, NULL, p_text, p_hash, p_recorded_at, p_speaker);
    SELECT a.covers_through, s.tail_threshold INTO covers, threshold FROM clocks c
        LEFT JOIN aliases a ON a.tenant = c.tenant AND a.subject = c.subject
        LEFT JOIN job_settings s ON s.tenant = c.tenant
        WHERE c.tenant = p_tenant AND c.subject = p_subject;
    threshold := COALESCE(threshold, p_default_threshold);
    tail := v_seq - COALESCE(covers, 0);
    IF threshold > 0 AND tail > threshold THEN
        INSERT INTO jobs AS j (tenant, subject, state, reason, detail, force, due, queued_at)
            VALUES (p_tenant, p_subject, 'queued', 'tail',
                    'tail of ' || tail || ' events > ' || threshold, FALSE, now_s, now_s)
            ON CONFLICT (tenant, subject) DO UPDATE SET
                state = CASE WHEN j.state = 'done' THEN 'queued' ELSE j.state END,
                reason = CASE WHEN j.state = 'done' THEN excluded.reason
                    WHEN position(',tail,' IN ',' || j.reason || ',') > 0 THEN j.reason
                    ELSE j.reason || ',' || excluded.reason END,
                detail = excluded.detail,
                force = CASE WHEN j.state = 'done' THEN excluded.force
                    ELSE (j.force OR excluded.force) END,
                rerun = (j.state = 'running' OR j.rerun),
                due = CASE WHEN j.state = 'done' THEN excluded.due ELSE j.due END,
                attempts = CASE WHEN j.state = 'done' THEN 0 ELSE j.attempts END,
                queued_at = CASE WHEN j.state = 'done' THEN excluded.queued_at
                    ELSE j.queued_at END;
    END IF;
    RETURN v_seq;
END
$$;
