-- memlineage schema 15 (PostgreSQL): event vectors are stored as int8 (1 byte a dimension,
-- each scaled by its largest component), no longer float16 (2 bytes): docs/recall.md.

-- Rewind the embedding job where the vectors are the built-in model's (local, cheap):
-- it embeds those events again and overwrites each float16 row with an int8 one. Until
-- then recall reads the old rows as float16 (a row's length against its embedder's
-- dimensions says which it is), so no ranking by meaning is lost. Another embedder's
-- rows (a remote one is paid per text) stay float16 until the embedder changes.
UPDATE clocks SET vectors_through = 0
WHERE vectors_through > 0 AND EXISTS (
    SELECT 1 FROM embedders e
    WHERE e.tenant = clocks.tenant AND e.version = clocks.vectors_embedder
      AND substr(e.model, 1, 10) = 'wordllama-'
);
