-- 0005: the post queues (store.Queue): a pending ask waiting for its
-- turn to be posted names its queue in record.postQueue. The column is
-- derived from the record, so no write names it.
ALTER TABLE asks ADD COLUMN post_queue text GENERATED ALWAYS AS (record->>'postQueue') STORED;
CREATE INDEX asks_post_queue ON asks (post_queue, created_at, id) WHERE post_queue IS NOT NULL;
