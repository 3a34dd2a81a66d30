package asks

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
)

// syncer brings posted messages in step with their records. It is handed
// the record of each change as stored (mark), and renders it at once
// without reading it again: a read would be no fresher. Marks of one ask
// coalesce: however many changes arrive while an update is in flight, one
// more update follows it, rendering the newest record as it then stands
// (read again: the mark waited, and another replica may have changed the
// ask meanwhile, even ended it and drawn it ended).
type syncer struct {
	s       *Service
	mu      sync.Mutex
	ctx     context.Context // set by start; nil before
	stopped bool            // set by run once ctx ended: no new updates
	// inflight holds the asks whose update loop runs, each with the
	// Version of the record it is rendering (0 before it takes one): a
	// mark of an older record (a snapshot taken before that change) is
	// dropped, as it would draw an older state after it.
	inflight map[string]int64
	latest   map[string]Record // the newest record marked and not yet rendered
	// settled holds, for asks whose update loop ended, the Version of the
	// last record it rendered and checked against the store (not held):
	// a later mark of that record or an older one is in step already.
	// Bounded (cleared when it grows past settledMax): it only saves
	// updates.
	settled map[string]int64
	wg      sync.WaitGroup
}

// settledMax bounds syncer.settled.
const settledMax = 4096

func newSyncer(s *Service) *syncer {
	return &syncer{s: s, inflight: map[string]int64{}, latest: map[string]Record{}, settled: map[string]int64{}}
}

// start lets marks start updates until ctx ends, and starts those of the
// marks made before (they waited: their records are read again).
func (y *syncer) start(ctx context.Context) {
	y.mu.Lock()
	defer y.mu.Unlock()
	y.ctx = ctx
	for id := range y.latest {
		y.startLocked(id, false)
	}
}

// run waits for ctx to end (start was called with it), then for the
// updates in flight.
func (y *syncer) run(ctx context.Context) {
	<-ctx.Done()
	y.mu.Lock()
	y.stopped = true
	y.mu.Unlock()
	y.wg.Wait()
}

// mark asks for the message of rec to be updated to show rec (or a newer
// record of the same ask).
func (y *syncer) mark(rec Record) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if old, ok := y.latest[rec.ID]; ok && old.Version > rec.Version {
		return
	}
	if v, ok := y.settled[rec.ID]; ok {
		if rec.Version <= v {
			return // rendered and checked by a loop that has ended
		}
		delete(y.settled, rec.ID)
	}
	v, running := y.inflight[rec.ID]
	if v > rec.Version {
		return
	}
	y.latest[rec.ID] = rec
	if y.ctx == nil || running {
		return // started by run, or by the update in flight when it ends
	}
	y.startLocked(rec.ID, true)
}

// startLocked starts the update loop of id; fresh says that its first
// record was marked just now (see loop).
func (y *syncer) startLocked(id string, fresh bool) {
	if y.stopped || y.ctx.Err() != nil {
		return // stopping: the record stays unsynced and is updated at the next start
	}
	y.inflight[id] = 0
	ctx := y.ctx
	y.wg.Go(func() { y.loop(ctx, id, fresh) })
}

// loop renders the records marked for id until none is left. The first
// record, when fresh, is rendered as it was marked: it was stored by this
// process just before. Every later one was marked while an update was in
// flight and has waited for it (seconds, when Slack is slow or failing):
// it is read again and rendered as it stands, or dropped when another
// process brought the message in step meanwhile.
func (y *syncer) loop(ctx context.Context, id string, fresh bool) {
	// rendered is the Version of the newest record whose rendering landed
	// and was checked against the store (syncMessage): a record marked
	// meanwhile that is no newer is in step already. (An update that
	// found the record moved on renders the newer one itself; the mark of
	// that change, made before, would otherwise send it a second time.)
	var rendered int64
	for {
		y.mu.Lock()
		rec, ok := y.latest[id]
		delete(y.latest, id)
		if !ok || ctx.Err() != nil {
			delete(y.inflight, id)
			if rendered > 0 {
				if len(y.settled) >= settledMax {
					clear(y.settled)
				}
				y.settled[id] = rendered
			}
			y.mu.Unlock()
			return
		}
		if rec.Version <= rendered {
			y.mu.Unlock()
			continue
		}
		y.inflight[id] = rec.Version
		y.mu.Unlock()
		if !fresh {
			cur, err := y.s.store.Get(ctx, id)
			switch {
			case isNotFound(err):
				continue
			case err != nil:
				// Left unsynced in the store: the dispatcher renders it
				// once it can read it.
				if ctx.Err() == nil {
					y.s.log.Warn().Err(err).Str("ask", id).Msg("message update: could not read the ask again; retrying later")
				}
				continue
			}
			rec = cur
			y.renderingNow(rec)
		}
		fresh = false
		if y.syncWithRetry(ctx, rec) {
			// Settled: the last rendering landed and its check was not
			// held (a held one must be rendered again after the hold).
			y.mu.Lock()
			rendered = y.inflight[id]
			y.mu.Unlock()
		}
	}
}

// syncWithRetry makes one attempt at bringing the message of rec in step
// at once and reports whether it settled it (syncMessage); a failure is
// left to the dispatcher, which retries with backoff (on whichever replica
// claims the record) until the message matches the record.
func (y *syncer) syncWithRetry(ctx context.Context, rec Record) bool {
	settled, err := y.s.syncMessage(ctx, rec)
	if err == nil {
		y.s.sched.succeeded(rec.ID, dutySync)
		return settled
	}
	if ctx.Err() != nil {
		return false
	}
	y.s.log.Warn().Err(err).Str("ask", rec.ID).Msg("message update failed; retrying later")
	y.s.sched.failed(rec.ID, dutySync)
	y.s.rewake(context.WithoutCancel(ctx), rec.ID)
	return false
}

// syncMessage updates the message of rec to show it; once the update
// landed and the record has not moved on, the record is marked synced.
//
// The message never stays behind the record, however replicas interleave
// their updates: after each update lands, the record is read back in the
// same compare-and-set that would mark it synced; when its Rev moved past
// the rendering that just landed, that rendering may have landed after a
// newer one (from another replica or an earlier attempt), so the record is
// marked unsynced and the newest rendering is sent again. The last update
// to land is always followed by such a check, and Rev only grows. An
// update whose sender died is followed by no check: a record that may
// have one in flight is held, unsynced until no such update can land: at
// start-up whatever recovery finds unsynced (dispatcher.held), and
// whenever the record lists another process as drawing it (drawers.go).
//
// A rendering the surface refused for its rate limit is never sent again
// as it was: after the pause the record is read again and rendered as it
// stands (afterRateLimit).
//
// settled reports that the last rendering sent was checked and not held:
// the record was in step with it (or had moved on and was rendered in turn).
func (s *Service) syncMessage(ctx context.Context, rec Record) (settled bool, err error) {
	from, waits := -1, 0 // the view to draw first (drawViews); pauses waited out
	for {
		if !rec.Posted() || rec.Synced {
			return false, nil
		}
		if !s.listedFresh(rec, s.now()) {
			// Not listed as drawing (a claim, recovery, a stale click), or
			// listed too long ago (a slow update, a pause): listed first.
			cur, err := s.relist(ctx, rec.ID, true)
			if isNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			if cur.Rev != rec.Rev {
				from = -1
			}
			rec = cur
			s.syncer.renderingNow(rec)
			continue
		}
		at, err := s.drawViews(ctx, &rec, from)
		var rl *RateLimited
		if errors.As(err, &rl) && waits < maxUpdateWaits {
			waits++
			cur, err := s.afterRateLimit(ctx, rec.ID, rl.RetryAfter)
			if isNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			from = -1
			if cur.Rev == rec.Rev {
				from = at // the views before it show this revision already
			}
			rec = cur
			s.syncer.renderingNow(rec)
			continue
		}
		if err != nil {
			return false, err
		}
		from = -1
		held := s.sched.holding(rec.ID)
		var (
			seen           *Record // the newer record, when not written
			moved, holding bool
		)
		cur, err := s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
			seen, moved, holding = nil, false, false
			now := s.now()
			switch {
			case r.Rev == rec.Rev:
				if r.Synced || held {
					return errNoChange // held: rendered again once the hold ends
				}
				s.unlistSelf(r, now) // this process's updates are checked
				if s.othersDrawing(*r, now).IsZero() {
					r.Synced = true
				} else {
					// Another process's update may land over this one: left
					// unsynced, due when it can land no more (nextWake).
					holding = true
				}
			case r.Rev > rec.Rev:
				moved = true
				switch {
				case r.Synced:
					r.Synced = false
					s.listSelf(r, now)
				case !s.listedFresh(*r, now):
					s.listSelf(r, now) // the newer one is drawn next
				default:
					c := store.Clone(*r)
					seen = &c
					return errNoChange
				}
			default:
				return errNoChange
			}
			return nil
		})
		switch {
		case errors.Is(err, errNoChange) && seen != nil:
			cur, err = *seen, nil
		case errors.Is(err, errNoChange), isNotFound(err):
			err, moved = nil, false
		}
		if err != nil || !moved {
			return err == nil && !held && !holding, err
		}
		rec = cur
		s.syncer.renderingNow(rec)
	}
}

// maxUpdateWaits bounds the rate-limit pauses one syncMessage waits out
// before it leaves the record to the dispatcher's retry with backoff.
const maxUpdateWaits = 20

// drawViews makes the views of *rec show it: the main message, then each
// posted copy, starting at from (-1: the main message; else that copy).
// The caller has listed this process as drawing (drawers.go); a copy whose
// update would start past that listing's cover is listed again first.
// On an error it returns the view that failed (-1 or a copy's index).
func (s *Service) drawViews(ctx context.Context, rec *Record, from int) (int, error) {
	if from < 0 && !rec.MessageGone {
		err := s.surface.Update(ctx, *rec)
		switch {
		case errors.Is(err, ErrMessageGone):
			if err := s.messageGone(ctx, *rec, err); err != nil {
				return -1, err
			}
			rec.MessageGone = true
		case err != nil:
			return -1, err
		default:
			s.stats.updates.Add(1)
		}
	}
	for i := max(from, 0); i < len(rec.Copies); i++ {
		c := rec.Copies[i]
		if c.Ref == "" {
			continue
		}
		if !s.listedFresh(*rec, s.now()) { // the views before took long: listed again
			cur, err := s.relist(ctx, rec.ID, false)
			if err != nil {
				return i, err
			}
			rec.Drawers = cur.Drawers
		}
		err := s.surface.UpdateCopy(ctx, *rec, c)
		switch {
		case errors.Is(err, ErrMessageGone):
			// One copy gone leaves the others and the ask as they are.
			s.log.Info().Err(err).Str("ask", rec.ID).Str("copy", c.Ref).Msg("a copy of the ask's message is gone; not updating it")
		case err != nil:
			return i, err
		default:
			s.stats.updates.Add(1)
		}
	}
	return 0, nil
}

// afterRateLimit waits out a pause the surface asked for and reads the
// record of id again. The rendering the surface refused is not sent as it
// was: during the pause another replica may have changed the ask (ended
// it, and drawn it ended), and it would draw the older state over that.
// (Chaos runs on replicas saw exactly this while Slack's 429 was waited
// out inside the Slack adapter with the rendering in hand.)
func (s *Service) afterRateLimit(ctx context.Context, id string, pause time.Duration) (Record, error) {
	s.log.Info().Str("ask", id).Dur("retry_after", pause).Msg("message update rate limited; rendering the record as it stands after the pause")
	select {
	case <-s.clock.After(pause):
	case <-ctx.Done():
		return Record{}, ctx.Err()
	}
	return s.store.Get(ctx, id)
}

// messageGone records that Slack said the message of rec is gone, so that
// no process updates it again, and logs it once: by the write that set it.
// The ask keeps its status and outcome.
func (s *Service) messageGone(ctx context.Context, rec Record, cause error) error {
	_, err := s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
		if r.MessageGone {
			return errNoChange
		}
		r.MessageGone = true
		return nil
	})
	switch {
	case err == nil:
		s.log.Warn().Err(cause).Str("ask", rec.ID).Str("status", string(rec.Status)).
			Msg("the ask's message is gone from Slack; the ask keeps its outcome and its message is not updated again")
	case errors.Is(err, errNoChange), isNotFound(err):
		return nil
	}
	return err
}

// renderingNow notes that the update loop of rec's ask now renders rec
// (see inflight).
func (y *syncer) renderingNow(rec Record) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if _, ok := y.inflight[rec.ID]; ok { // else no loop: waitIdle would wait on it
		y.inflight[rec.ID] = rec.Version
	}
}

// resyncStale follows an act on the message of *rec: when the person acted
// on a rendering older than the record's while the record says the
// message shows it (or the ask has ended), the message they see is not in
// step (an update lost, or one that landed out of order), so the record is
// marked unsynced and its message updated now.
func (s *Service) resyncStale(a Act, rec *Record) {
	r := *rec
	if a.Form || r.Ref == "" || a.Ref != r.Ref || a.Rev >= r.Rev || (!r.Synced && !r.Status.Ended()) {
		return
	}
	s.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var pending *Record // unsynced already: its update is due; bring it forward
		cur, err := s.store.Update(ctx, r.ID, func(x *Record) error {
			pending = nil // fn may run twice (store.Store.Update): only the last run's copy counts
			switch {
			case x.Rev != r.Rev:
				return errNoChange // moved on: that change brings the message in step
			case !x.Synced:
				c := store.Clone(*x)
				pending = &c
				return errNoChange
			}
			x.Synced = false
			return nil
		})
		switch {
		case errors.Is(err, errNoChange) && pending != nil:
			cur = *pending
		case err != nil:
			return
		}
		s.sched.succeeded(r.ID, dutySync) // the click says: try now
		s.syncer.mark(cur)
	})
}

// waitIdle blocks until no update is in flight or ctx ends.
func (y *syncer) waitIdle(ctx context.Context) {
	for ctx.Err() == nil {
		y.mu.Lock()
		n := len(y.inflight)
		y.mu.Unlock()
		if n == 0 {
			return
		}
		clock.Sleep(ctx, 50*time.Millisecond)
	}
}
