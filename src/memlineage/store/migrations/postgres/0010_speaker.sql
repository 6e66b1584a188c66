-- memlineage schema 10: who said an event's text (a chat turn's speaker), when the client
-- gave it. NULL for every event stored before: the field is optional, and an event's hash
-- includes it only when present, so the hashes of those events do not change.
ALTER TABLE events ADD COLUMN speaker TEXT;
