-- 0001: ask records, secrets, leases and change notifications.
--
-- The whole store.Record is kept as JSONB in asks.record; the other columns
-- copy what is queried, so that lookups and listings use indexes. version
-- and wake_at are authoritative (ClaimDue moves them without rewriting the
-- record). Times are bigint unix nanoseconds (sub-second precision,
-- ordered, the same in every replica); NULL stands for "none".
-- idempotency_key is NULL when the record has none, so that UNIQUE only
-- binds real keys.
CREATE TABLE asks (
	id              text    NOT NULL PRIMARY KEY,
	status          text    NOT NULL,
	created_at      bigint  NOT NULL,
	ended_at        bigint,
	idempotency_key text    UNIQUE,
	synced          boolean NOT NULL DEFAULT false,
	remind_at       bigint,
	wake_at         bigint,
	version         bigint  NOT NULL,
	record          jsonb   NOT NULL
);

-- List (newest first), List by status, Pending (oldest first).
CREATE INDEX asks_created ON asks (created_at, id);
CREATE INDEX asks_status_created ON asks (status, created_at, id);
-- Prune.
CREATE INDEX asks_ended ON asks (ended_at) WHERE ended_at IS NOT NULL;
-- List(Unsynced): ended records whose final update has not reached Slack.
CREATE INDEX asks_unsynced ON asks (created_at, id) WHERE NOT synced AND status <> 'pending';
-- ClaimDue.
CREATE INDEX asks_wake ON asks (wake_at, id) WHERE wake_at IS NOT NULL;

CREATE TABLE secrets (
	name       text        NOT NULL PRIMARY KEY,
	value      bytea       NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now()
);

-- Lease: expiry is judged by the database's clock, the one clock every
-- replica shares.
CREATE TABLE leases (
	name       text        NOT NULL PRIMARY KEY,
	holder     text        NOT NULL,
	expires_at timestamptz NOT NULL
);

-- Every committed write of a row notifies the schema's channel (see
-- notifyChannel in postgres.go), in the writing transaction, so that Watch
-- in every replica hears of it exactly when it commits.
CREATE FUNCTION asks_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	r asks;
BEGIN
	IF TG_OP = 'DELETE' THEN
		r := OLD;
	ELSE
		r := NEW;
	END IF;
	PERFORM pg_notify('slackask_' || left(md5(TG_TABLE_SCHEMA), 20),
		json_build_object('id', r.id, 'v', r.version, 's', r.status, 'd', TG_OP = 'DELETE')::text);
	RETURN NULL;
END
$$;

CREATE TRIGGER asks_notify AFTER INSERT OR UPDATE OR DELETE ON asks
	FOR EACH ROW EXECUTE FUNCTION asks_notify();
