-- 0003: the audit trail (store.Event).
--
-- Append-only: a row is written in the transaction of the change that
-- emitted it, and removed only with its ask (the foreign key cascades, so
-- Delete and Prune take the events of an ask along, also those committed
-- while they waited for its row). by_user and data keep the JSON as
-- written (json, not jsonb: the key order of data stays the emitter's);
-- at is unix nanoseconds.
--
-- seq is not a sequence: a sequence hands out numbers at nextval, not at
-- commit, so with several writers an event with a lower seq can commit
-- after a reader has served a higher one, and a reader resuming after
-- that one would never see it. event_seq.last is taken with a row lock in
-- the statement that inserts the events, the last before COMMIT, and the
-- lock is released only once the commit is visible: transactions with
-- events commit in seq order (see insertEvents in postgres.go).
CREATE TABLE events (
	seq     bigint NOT NULL PRIMARY KEY,
	ask_id  text   NOT NULL REFERENCES asks (id) ON DELETE CASCADE,
	at      bigint NOT NULL,
	kind    text   NOT NULL,
	by_user json,
	data    json
);

-- The events of one ask, in order; the cascade.
CREATE INDEX events_ask ON events (ask_id, seq);

-- The last seq given out: one row.
CREATE TABLE event_seq (
	one  boolean NOT NULL PRIMARY KEY DEFAULT true CHECK (one),
	last bigint  NOT NULL
);
INSERT INTO event_seq (last) VALUES (0);
