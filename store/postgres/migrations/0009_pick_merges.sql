-- 0009: a person's pick merged into the row, with no current copy of it.
--
-- loud_xmin is the transaction of the row's last write that was not a
-- pick merge or a quiet write of picks alone (store.Record.Quiet): its
-- insert, a claim, an end, a redraw, any write of a replica from before
-- this migration. A replica whose copy of the record is current as of
-- that write may merge one pick into the row (merge.go)
-- whatever picks other replicas merged since, on the condition that
-- loud_xmin is still the one its copy saw. The trigger sets it for every
-- write that is not quiet (quiet_at behind version, as 0008's notify
-- trigger judges it); slackask's own quiet writes of more than picks set
-- it themselves. NULL (rows from before): unknown, so no merge until the
-- row's next such write.
ALTER TABLE asks ADD COLUMN loud_xmin xid;

CREATE FUNCTION asks_loud() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.loud_xmin := pg_current_xact_id()::xid;
	RETURN NEW;
END
$$;

CREATE TRIGGER asks_loud BEFORE INSERT OR UPDATE ON asks
	FOR EACH ROW WHEN (NEW.quiet_at IS DISTINCT FROM NEW.version) EXECUTE FUNCTION asks_loud();
