-- 0002: acks relayed between replicas (store.AckRelay).
--
-- A replica whose last Socket Mode connection had sent its close frame
-- when an envelope arrived on it stores the act, then leaves the ack here
-- for another replica to send on one of its own connections. An entry is
-- useful for Slack's 3 s only: the writer drops older ones, and the taker
-- refuses them. UNLOGGED: after a crash of the server the entries are
-- stale anyway.
CREATE UNLOGGED TABLE ack_relays (
	envelope_id text        NOT NULL PRIMARY KEY,
	origin      text        NOT NULL,
	ack         bytea       NOT NULL,
	created_at  timestamptz NOT NULL DEFAULT clock_timestamp()
);
