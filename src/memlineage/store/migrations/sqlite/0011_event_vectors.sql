-- memlineage schema 11 (SQLite): embeddings of events, for recall by meaning (docs/recall.md).

-- The embedders a tenant has had, in order; its current one is the latest. A vector
-- names the one it was computed with, so one model's vectors are never compared
-- with another's, and recall tells which events have a vector of the current one.
CREATE TABLE embedders (
    tenant         TEXT    NOT NULL,
    version        INTEGER NOT NULL,  -- 1, 2, ... per tenant
    model          TEXT    NOT NULL,
    model_version  TEXT    NOT NULL,
    dims           INTEGER NOT NULL,
    set_at         TEXT    NOT NULL,
    PRIMARY KEY (tenant, version)
);

-- The embedding job's watermark: every event with seq <= vectors_through has a vector
-- of the tenant's embedder number vectors_embedder (or was erased). 0 and 0: none yet.
ALTER TABLE clocks ADD COLUMN vectors_through INTEGER NOT NULL DEFAULT 0;
ALTER TABLE clocks ADD COLUMN vectors_embedder INTEGER NOT NULL DEFAULT 0;

-- One vector per event, float16 little-endian (2 bytes a dimension). Derived from the
-- text: erasure deletes the row (secure_delete zeroes its bytes in the file).
-- WITHOUT ROWID: the rows live in the primary key's b-tree, with no second copy of the
-- key in an index (measured: 28 fewer bytes per event at 256 dimensions; a row of 512
-- bytes of vector stays below the size at which an index b-tree spills to overflow pages).
CREATE TABLE event_vectors (
    tenant    TEXT    NOT NULL,
    subject   TEXT    NOT NULL,
    seq       INTEGER NOT NULL,
    embedder  INTEGER NOT NULL,  -- embedders.version of the tenant
    vector    BLOB    NOT NULL,
    PRIMARY KEY (tenant, subject, seq)
) WITHOUT ROWID;
