-- 0004: scoped API keys, and the key that owns each ask.
--
-- A key is stored as its SHA-256 only. scope is the JSON of its
-- workspaces, channels and responders. asks.owner copies
-- store.Record.Owner (NULL for asks made with the server's own token), so
-- that a key's listing uses an index.
CREATE TABLE api_keys (
	id         TEXT    NOT NULL PRIMARY KEY,
	name       TEXT    NOT NULL UNIQUE,
	hash       BLOB    NOT NULL UNIQUE,
	scope      TEXT    NOT NULL,
	created_at INTEGER NOT NULL,
	revoked_at INTEGER
) STRICT;

ALTER TABLE asks ADD COLUMN owner TEXT;
CREATE INDEX asks_owner_created ON asks (owner, created_at, id) WHERE owner IS NOT NULL;
