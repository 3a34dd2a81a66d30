-- 0006: Slack installations (OAuth installs for many workspaces) and the
-- nonces of used OAuth states.
--
-- id is the team, or the enterprise of an org-wide install. sealed is the
-- installation with its tokens, sealed with AES-GCM by package installs:
-- no token is ever stored in the clear. version is compared by
-- SwapInstall, so that two replicas refreshing one token lose neither.
CREATE TABLE installs (
	id         TEXT    NOT NULL PRIMARY KEY,
	enterprise TEXT    NOT NULL,
	team       TEXT    NOT NULL,
	org_wide   INTEGER NOT NULL,
	version    INTEGER NOT NULL,
	sealed     BLOB    NOT NULL,
	expires_at INTEGER,
	updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX installs_enterprise ON installs (enterprise) WHERE enterprise <> '';

CREATE TABLE oauth_nonces (
	nonce      TEXT    NOT NULL PRIMARY KEY,
	expires_at INTEGER NOT NULL
) STRICT;
