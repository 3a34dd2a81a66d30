-- 0001: ask records and secrets.
--
-- The whole store.Record is kept as JSON in asks.record; the other columns
-- copy what is queried, so that lookups and listings use indexes. Times are
-- integer unix nanoseconds (sub-second precision, ordered); NULL stands for
-- "none". idempotency_key is NULL when the record has none, so that UNIQUE
-- only binds real keys.
CREATE TABLE asks (
	id              TEXT    NOT NULL PRIMARY KEY,
	status          TEXT    NOT NULL,
	created_at      INTEGER NOT NULL,
	ended_at        INTEGER,
	idempotency_key TEXT    UNIQUE,
	synced          INTEGER NOT NULL DEFAULT 0,
	remind_at       INTEGER,
	version         INTEGER NOT NULL,
	record          TEXT    NOT NULL
) STRICT;

-- List (newest first), List by status, Pending (oldest first).
CREATE INDEX asks_created ON asks (created_at, id);
CREATE INDEX asks_status_created ON asks (status, created_at, id);
-- Prune.
CREATE INDEX asks_ended ON asks (ended_at) WHERE ended_at IS NOT NULL;
-- List(Unsynced): ended records whose final update has not reached Slack.
CREATE INDEX asks_unsynced ON asks (created_at, id) WHERE synced = 0 AND status <> 'pending';
-- Reminders due.
CREATE INDEX asks_remind ON asks (remind_at) WHERE remind_at IS NOT NULL AND status = 'pending';

CREATE TABLE secrets (
	name       TEXT    NOT NULL PRIMARY KEY,
	value      BLOB    NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;
