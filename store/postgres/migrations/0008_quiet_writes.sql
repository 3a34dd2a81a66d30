-- 0008: writes that no watcher acts on go unannounced.
--
-- An Update whose fn marked it quiet (store.Record.Quiet: a person's draft
-- picks) sets quiet_at to the version it writes; every other write of a
-- row leaves quiet_at behind its version (a replica from before this
-- migration never sets it), so the notification is skipped exactly for
-- the quiet write itself. That spares the trigger, the notification
-- queue and every listening replica's wake-up on the commonest write, a
-- select click. Inserts and deletes always notify.
ALTER TABLE asks ADD COLUMN quiet_at bigint;

DROP TRIGGER asks_notify ON asks;
CREATE TRIGGER asks_notify AFTER INSERT OR DELETE ON asks
	FOR EACH ROW EXECUTE FUNCTION asks_notify();
CREATE TRIGGER asks_notify_update AFTER UPDATE ON asks
	FOR EACH ROW WHEN (NEW.quiet_at IS DISTINCT FROM NEW.version) EXECUTE FUNCTION asks_notify();
