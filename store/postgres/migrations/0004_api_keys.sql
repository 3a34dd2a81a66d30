-- 0004: scoped API keys, and the key that owns each ask.
--
-- A key is stored as its SHA-256 only. scope is the JSON of its
-- workspaces, channels and responders. asks.owner copies
-- store.Record.Owner (NULL for asks made with the server's own token), so
-- that a key's listing uses an index.
CREATE TABLE api_keys (
	id         text   NOT NULL PRIMARY KEY,
	name       text   NOT NULL UNIQUE,
	hash       bytea  NOT NULL UNIQUE,
	scope      jsonb  NOT NULL,
	created_at bigint NOT NULL,
	revoked_at bigint
);

ALTER TABLE asks ADD COLUMN owner text;
CREATE INDEX asks_owner_created ON asks (owner, created_at, id) WHERE owner IS NOT NULL;
