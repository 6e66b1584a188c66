-- memlineage schema 16 (SQLite): the operations recorded since an epoch, by index.

-- A switch over the published summary reads the operations recorded since that summary
-- read the subject (each moves the epoch once): when they name only newer events, the
-- summary's inputs stand as its switch re-validated them (store/switch.py). Epochs never
-- decrease along op_seq, so this is a range of the index, not the operation log.
CREATE INDEX operations_by_epoch ON operations (tenant, subject, epoch) WHERE kind <> 'policy';
