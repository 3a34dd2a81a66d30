-- 0002: when each ask next has work (ClaimDue), and named leases (Lease).
--
-- asks.wake_at is the authoritative copy of store.Record.WakeAt, in unix
-- nanoseconds, NULL for none: ClaimDue moves it without rewriting the
-- record's JSON.
ALTER TABLE asks ADD COLUMN wake_at INTEGER;
CREATE INDEX asks_wake ON asks (wake_at, id) WHERE wake_at IS NOT NULL;

CREATE TABLE leases (
	name       TEXT    NOT NULL PRIMARY KEY,
	holder     TEXT    NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT;
