package asks

import (
	"context"
	"errors"
	"time"

	"github.com/slackask/slackask/store"
)

// A process that dies with an update of a message in flight leaves it to
// land late (Slack applies a call whose sender is gone), possibly after
// another process drew a newer state and marked the record synced; no
// check follows it, so the message would show the older state for good.
// Record.Drawers names the processes (Service.holder) that may have such
// an update in flight, each with when it was listed:
//
//   - the write that makes a record need drawing lists its writer, which
//     draws it next (wakeStore.Update: no write of its own);
//   - no update starts more than drawRenew after its process's listing:
//     one that would lists the process again first (a write, off the
//     common path: after a slow update, a rate-limit pause, a claim);
//   - so every update by a listed process lands by At + postGrace, and a
//     check that finds another process listed until later leaves the
//     record unsynced (its own listing dropped), due again when the last
//     such update can no longer land (nextWake): drawn once more then, by
//     whichever replica claims it. A living lister settles it first:
//     its check draws the newer state (as any check after an update
//     that crossed a newer one does), or, its update refused for a rate
//     limit or failed, it draws the record as it stands after the pause
//     or at its retry (where it used to find it synced: one update more
//     then). On one replica nobody else is listed: nothing changes.

// drawRenew bounds how long after its listing a process starts an update
// of an ask's views. An update lands within postGrace - drawRenew (40 s)
// of its start: the Slack client gives up after 30 s, and a dead sender's
// call reaching Slack is applied within seconds. (A listing is read by
// other replicas' clocks: they are taken to agree within seconds, as for
// every time in the store.)
const drawRenew = 5 * time.Second

// listSelf lists this process in r.Drawers as drawing from now, dropping
// listings whose updates can no longer land.
func (s *Service) listSelf(r *Record, now time.Time) {
	r.Drawers = append(s.keptDrawers(r.Drawers, now), store.Drawer{Proc: s.holder, At: now})
}

// unlistSelf drops this process's listing from r.Drawers (its updates are
// checked), and listings whose updates can no longer land.
func (s *Service) unlistSelf(r *Record, now time.Time) {
	r.Drawers = s.keptDrawers(r.Drawers, now)
}

// keptDrawers returns, in a new slice (ds may be shared with another copy
// of the record), the listings of ds by other processes that may still
// land an update after now.
func (s *Service) keptDrawers(ds []store.Drawer, now time.Time) []store.Drawer {
	var out []store.Drawer
	for _, d := range ds {
		if d.Proc != s.holder && d.At.Add(postGrace).After(now) {
			out = append(out, d)
		}
	}
	return out
}

// listedFresh reports whether r lists this process recently enough for an
// update of its views to start at now.
func (s *Service) listedFresh(r Record, now time.Time) bool {
	for _, d := range r.Drawers {
		if d.Proc == s.holder && now.Sub(d.At) <= drawRenew {
			return true
		}
	}
	return false
}

// othersDrawing returns until when an update of r's views by another
// process listed in r may land; zero when none can after now.
func (s *Service) othersDrawing(r Record, now time.Time) time.Time {
	var until time.Time
	for _, d := range r.Drawers {
		if end := d.At.Add(postGrace); d.Proc != s.holder && end.After(now) && end.After(until) {
			until = end
		}
	}
	return until
}

// relist lists this process as drawing rec's ask from now, before an
// update that its listing in rec does not cover starts, and returns the
// record as it stands. With unsynced set nothing is written when the
// record is synced (or not posted) meanwhile: no update is to start.
func (s *Service) relist(ctx context.Context, id string, unsynced bool) (Record, error) {
	var seen *Record
	rec, err := s.store.Update(context.WithoutCancel(ctx), id, func(r *Record) error {
		seen = nil // fn may run twice (store.Store.Update): only the last run's copy counts
		if unsynced && (r.Synced || !r.Posted()) {
			c := store.Clone(*r)
			seen = &c
			return errNoChange
		}
		s.listSelf(r, s.now())
		return nil
	})
	if errors.Is(err, errNoChange) && seen != nil {
		return *seen, nil
	}
	return rec, err
}
