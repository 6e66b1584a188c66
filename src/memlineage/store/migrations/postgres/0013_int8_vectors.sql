-- memlineage schema 13 (PostgreSQL): event vectors are stored as int8 (1 byte a dimension,
-- each scaled by its largest component), no longer float16 (2 bytes): docs/recall.md.

-- Rewind the embedding job: it embeds every event again and overwrites each float16 row
-- with an int8 one. Until then recall reads the old rows as float16 (a row's length
-- against its embedder's dimensions says which it is), so no ranking by meaning is lost.
UPDATE clocks SET vectors_through = 0 WHERE vectors_through > 0;
