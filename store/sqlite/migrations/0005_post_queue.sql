-- 0005: the post queues (store.Queue): a pending ask waiting for its
-- turn to be posted names its queue in record.postQueue. The column is
-- derived from the record, so no write names it; only a record that
-- mentions the key is parsed (and never a malformed one: a write must
-- not fail on the column).
ALTER TABLE asks ADD COLUMN post_queue TEXT GENERATED ALWAYS AS (
	CASE WHEN instr(record, '"postQueue":') > 0 AND json_valid(record) THEN json_extract(record, '$.postQueue') END
) VIRTUAL;
CREATE INDEX asks_post_queue ON asks (post_queue, created_at, id) WHERE post_queue IS NOT NULL;
