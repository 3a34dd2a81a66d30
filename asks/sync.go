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
// the record of each change as stored (mark), so it reads nothing before
// rendering. Marks of one ask coalesce: however many changes arrive while
// an update is in flight, one more update follows it, rendering the newest
// record marked.
type syncer struct {
	s       *Service
	mu      sync.Mutex
	ctx     context.Context // set by run; nil before
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

// run lets marks start updates until ctx ends, then waits for them.
func (y *syncer) run(ctx context.Context) {
	y.mu.Lock()
	y.ctx = ctx
	var queued []string
	for id := range y.latest {
		queued = append(queued, id)
	}
	for _, id := range queued {
		y.startLocked(id)
	}
	y.mu.Unlock()
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
	y.startLocked(rec.ID)
}

func (y *syncer) startLocked(id string) {
	if y.stopped || y.ctx.Err() != nil {
		return // stopping: the record stays unsynced and is updated at the next start
	}
	y.inflight[id] = 0
	ctx := y.ctx
	y.wg.Go(func() { y.loop(ctx, id) })
}

func (y *syncer) loop(ctx context.Context, id string) {
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
// have one in flight is held (dispatcher.held), unsynced until no such
// update can land.
//
// settled reports that the last rendering sent was checked and not held:
// the record was in step with it (or had moved on and was rendered in turn).
func (s *Service) syncMessage(ctx context.Context, rec Record) (settled bool, err error) {
	for {
		if !rec.Posted() || rec.Synced {
			return false, nil
		}
		if !rec.MessageGone {
			err := s.surface.Update(ctx, rec)
			switch {
			case errors.Is(err, ErrMessageGone):
				if err := s.messageGone(ctx, rec, err); err != nil {
					return false, err
				}
				rec.MessageGone = true
			case err != nil:
				return false, err
			default:
				s.stats.updates.Add(1)
			}
		}
		for _, c := range rec.Copies {
			if c.Ref == "" {
				continue
			}
			err := s.surface.UpdateCopy(ctx, rec, c)
			switch {
			case errors.Is(err, ErrMessageGone):
				// One copy gone leaves the others and the ask as they are.
				s.log.Info().Err(err).Str("ask", rec.ID).Str("copy", c.Ref).Msg("a copy of the ask's message is gone; not updating it")
			case err != nil:
				return false, err
			default:
				s.stats.updates.Add(1)
			}
		}
		held := s.sched.holding(rec.ID)
		var newer *Record
		_, err = s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
			newer = nil
			switch {
			case r.Rev == rec.Rev:
				if r.Synced || held {
					return errNoChange // held: rendered again once the hold ends
				}
				r.Synced = true
			case r.Rev > rec.Rev:
				c := store.Clone(*r)
				newer = &c
				if !r.Synced {
					return errNoChange
				}
				r.Synced = false
				newer.Synced = false
			default:
				return errNoChange
			}
			return nil
		})
		if errors.Is(err, errNoChange) || isNotFound(err) {
			err = nil
		}
		if err != nil || newer == nil {
			return err == nil && !held, err
		}
		rec = *newer
		s.syncer.renderingNow(rec)
	}
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
