-- 0003: the audit trail (store.Event).
--
-- Append-only: a row is written in the transaction of the change that
-- emitted it and removed only with its ask (Delete, Prune). seq is
-- AUTOINCREMENT so that it is never reused, also after the newest events
-- were pruned: a feed reader resuming after a seq must not be handed an
-- older number again. by_user is the JSON of interaction.User, NULL for
-- none; data the event's JSON, NULL for none. at is unix nanoseconds.
CREATE TABLE events (
	seq     INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,
	ask_id  TEXT    NOT NULL,
	at      INTEGER NOT NULL,
	kind    TEXT    NOT NULL,
	by_user TEXT,
	data    TEXT
) STRICT;

-- The events of one ask, in order; Delete and Prune.
CREATE INDEX events_ask ON events (ask_id, seq);
