-- 0006: Slack installations (OAuth installs for many workspaces) and the
-- nonces of used OAuth states.
--
-- id is the team, or the enterprise of an org-wide install. sealed is the
-- installation with its tokens, sealed with AES-GCM by package installs:
-- no token is ever stored in the clear. version is compared by
-- SwapInstall, so that two replicas refreshing one token lose neither.
CREATE TABLE installs (
	id         text    NOT NULL PRIMARY KEY,
	enterprise text    NOT NULL,
	team       text    NOT NULL,
	org_wide   boolean NOT NULL,
	version    bigint  NOT NULL,
	sealed     bytea   NOT NULL,
	expires_at bigint,
	updated_at bigint  NOT NULL
);
CREATE INDEX installs_enterprise ON installs (enterprise) WHERE enterprise <> '';

CREATE TABLE oauth_nonces (
	nonce      text    NOT NULL PRIMARY KEY,
	expires_at bigint  NOT NULL
);
