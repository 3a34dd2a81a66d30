package asks

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/slackask/slackask/internal/backoff"
	"github.com/slackask/slackask/store"
)

// Figures of the due dispatcher. Every replica sharing a store runs one;
// the store's ClaimDue hands each due record to one of them at a time.
const (
	// dueLease is how long a claim holds a record: a replica that dies
	// mid-work leaves its claims to come due again after it, for another
	// replica to take over.
	dueLease = 15 * time.Second
	// duePoll is how often a dispatcher asks the store for due records
	// when nothing in this process set an earlier wake-up.
	duePoll = 500 * time.Millisecond
	// dueBatch bounds the records one claim takes; dueWorkers the records
	// handled at once.
	dueBatch   = 64
	dueWorkers = 8
	// syncGrace is how long the process that changed a record has to
	// bring its message in step (it starts at once) before the change is
	// due for any replica.
	syncGrace = 10 * time.Second
	// postGrace is how long a stored ask may stay unposted before it is
	// due: longer than any call to the surface in flight takes to land,
	// even once its sender died (a replica that died between storing an
	// ask and posting it leaves it to another). It also bounds how long
	// a dead process's message update can land after its successor's
	// (see dispatcher.held).
	postGrace = 45 * time.Second
	// retryMax caps the pause between attempts of a failing duty: a
	// message left showing live buttons after an outage is fixed within
	// this of Slack coming back.
	retryMax = 30 * time.Second
)

// Duty is work the dispatcher does for a record when it comes due, besides
// the lifecycle's own (posting what was left unposted, expiry, the
// reminder, bringing the message in step). When and Do must be safe for
// concurrent use.
type Duty struct {
	// Name identifies the duty in logs and its retry pacing; unique.
	Name string
	// When says when rec next needs the duty; zero means never. It must
	// be a function of the record alone: it is evaluated inside every
	// write of the record to set the record's WakeAt.
	When func(rec Record) time.Time
	// Do does the duty for rec. Once done it must leave a trace in the
	// record (a store update) that moves When on, or it is done again.
	// An error retries it with backoff (on whichever replica claims the
	// record next); duties run at least once, so Do must be idempotent.
	Do func(ctx context.Context, rec Record) error
}

// AddDuty adds d to what the dispatcher does for due records. Call it
// before Start.
func (s *Service) AddDuty(d Duty) {
	c := s.sched
	c.mu.Lock()
	defer c.mu.Unlock()
	c.duties = append(c.duties, d)
}

// Names of the lifecycle's own retried duties (Duty names must differ).
const (
	dutyPost = "post"
	dutySync = "sync"
)

// dispatcher claims due records from the store and does what is due for
// each, then sets its next WakeAt. It replaces timers in memory: every
// write of a record through the Service's store sets WakeAt (nextWake),
// so whatever replica is alive finds the work in the store.
type dispatcher struct {
	s      *Service
	kick   chan struct{}
	mu     sync.Mutex
	duties []Duty
	soon   time.Time // the earliest WakeAt this process wrote since the last claim
	retry  map[retryKey]*retryState
	// held: asks whose message an earlier process may still update. A
	// record found unsynced at start-up may have had an update in flight
	// when its process died, and Slack can apply that update after this
	// process's newer one, putting an older rendering back (nothing tells
	// this process). Until the time held, a rendering that lands does
	// not mark the record synced, so the dispatcher renders it once more
	// after the time, and so does a successor if this process dies first.
	// (Record.Drawers holds a record so on every replica while another
	// process is listed drawing it; held also covers records written
	// before drawers were listed.)
	held map[string]time.Time
}

type retryKey struct{ id, duty string }

type retryState struct {
	b  backoff.Backoff
	at time.Time
}

func newDispatcher(s *Service) *dispatcher {
	return &dispatcher{s: s, kick: make(chan struct{}, 1), retry: map[retryKey]*retryState{}, held: map[string]time.Time{}}
}

// hold notes that an earlier process may update the message of id until
// postGrace from now (see held).
func (c *dispatcher) hold(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.held[id]; !ok {
		c.held[id] = c.s.now().Add(postGrace)
	}
}

// holding reports whether a rendering of id landing now may still be
// undone by an earlier process's update; once it is not, id is forgotten.
func (c *dispatcher) holding(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.held[id]
	if ok && !c.s.now().Before(until) {
		delete(c.held, id)
		return false
	}
	return ok
}

// add notes the WakeAt of a record this process stored, so that the loop
// claims it on time rather than at its next poll.
func (c *dispatcher) add(r Record) { c.noteWake(r.WakeAt) }

func (c *dispatcher) noteWake(at time.Time) {
	if at.IsZero() {
		return
	}
	c.mu.Lock()
	earlier := c.soon.IsZero() || at.Before(c.soon)
	if earlier {
		c.soon = at
	}
	c.mu.Unlock()
	// The loop claims again within duePoll anyway: a wake-up past that
	// needs no kick. Kicked, the loop would claim at once, find nothing
	// due and forget soon: a claim (a round trip on PostgreSQL) for
	// every write, as most writes set a WakeAt seconds ahead
	// (syncGrace, postGrace, a deadline).
	if earlier && at.Before(c.s.now().Add(duePoll)) {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// nextWake is when r next has work: the earliest of its post (when left
// unposted), deadline, reminder, message update and duties; zero for
// none. Failing work is paced by its retry state.
func (s *Service) nextWake(r *Record) time.Time {
	c := s.sched
	now := s.now()
	var w time.Time
	earliest := func(t time.Time) {
		if !t.IsZero() && (w.IsZero() || t.Before(w)) {
			w = t
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !r.Status.Ended() {
		switch {
		case !r.Posted() && r.PostQueue != "":
			earliest(c.pacedLocked(r.ID, dutyPost, latest(r.PostAt, r.CreatedAt)))
		case !r.Posted():
			earliest(c.pacedLocked(r.ID, dutyPost, r.CreatedAt.Add(postGrace)))
		}
		if r.ExpiresAt != nil {
			earliest(*r.ExpiresAt)
		}
		if r.Posted() && !r.RemindAt.IsZero() && !r.Reminded {
			earliest(r.RemindAt)
		}
	}
	earliest(c.pacedLocked(r.ID, dutyCopy, copiesDue(*r)))
	if r.Posted() && !r.Synced {
		when := now.Add(syncGrace)
		if until := c.held[r.ID]; until.After(when) {
			when = until // rendered once more when no earlier update can land
		}
		if until := s.othersDrawing(*r, now); until.After(when) {
			when = until // likewise for another process's update (drawers.go)
		}
		earliest(c.pacedLocked(r.ID, dutySync, when))
	}
	for _, d := range c.duties {
		earliest(c.pacedLocked(r.ID, d.Name, d.When(*r)))
	}
	return w
}

// pacedLocked returns when, or the time of the next attempt when the
// duty failed on this record before and that is later.
func (c *dispatcher) pacedLocked(id, duty string, when time.Time) time.Time {
	if when.IsZero() {
		return when
	}
	if st := c.retry[retryKey{id, duty}]; st != nil && st.at.After(when) {
		return st.at
	}
	return when
}

// failed paces the next attempt of duty on id; succeeded forgets it.
func (c *dispatcher) failed(id, duty string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := retryKey{id, duty}
	st := c.retry[k]
	if st == nil {
		st = &retryState{b: backoff.Backoff{Min: time.Second, Max: retryMax}}
		c.retry[k] = st
	}
	now := c.s.now()
	if now.Before(st.at) {
		// Another path's attempt failed before the paced one was due
		// (the syncer and the dispatcher both try): one outage is one
		// step of the backoff, not one per caller.
		return
	}
	st.at = now.Add(st.b.Next())
}

func (c *dispatcher) succeeded(id, duty string) {
	c.mu.Lock()
	delete(c.retry, retryKey{id, duty})
	c.mu.Unlock()
}

func (c *dispatcher) dutyList() []Duty {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Duty(nil), c.duties...)
}

// run claims and handles due records until ctx ends, then waits for the
// handling in flight.
func (c *dispatcher) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, dueWorkers)
	for ctx.Err() == nil {
		now := c.s.now()
		c.mu.Lock()
		c.soon = time.Time{}
		c.mu.Unlock()
		recs, err := c.s.store.ClaimDue(ctx, now, dueLease, dueBatch)
		if recs, err = c.s.readable("claim due asks", recs, err); err != nil && ctx.Err() == nil {
			c.s.log.Error().Err(err).Send()
		}
		for k, rec := range recs {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				c.release(recs[k:])
				return
			}
			wg.Go(func() {
				defer func() { <-sem }()
				c.handle(ctx, rec)
			})
		}
		if len(recs) == dueBatch {
			continue
		}
		wait := duePoll
		c.mu.Lock()
		if !c.soon.IsZero() {
			wait = min(wait, c.soon.Sub(c.s.now()))
		}
		c.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-c.kick:
		case <-c.s.clock.After(max(wait, 0)):
		}
	}
}

// release gives back the claims of records this process will not handle
// (it is stopping): their WakeAt is set to when they are due, so that a
// successor or another replica takes them at once rather than when the
// claim's lease runs out (a process killed outright leaves them to it).
func (c *dispatcher) release(recs []Record) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, rec := range recs {
		c.s.rewake(ctx, rec.ID)
	}
}

// handle does what is due for rec, claimed from the store, and then
// stores its next WakeAt (which also releases the claim). Expiry and the
// reminder happen once across replicas whatever the claims do: each is a
// compare-and-set on the record.
func (c *dispatcher) handle(ctx context.Context, rec Record) {
	s := c.s
	now := s.now()
	if !rec.Status.Ended() {
		var err error
		ran := true
		switch {
		case !rec.Posted() && rec.PostQueue != "" && !latest(rec.PostAt, rec.CreatedAt).After(now):
			err = s.postQueued(ctx, rec)
		case !rec.Posted() && rec.PostQueue == "" && !rec.CreatedAt.Add(postGrace).After(now):
			err = s.postLeft(ctx, rec)
		default:
			ran = false
		}
		if ran {
			if err != nil {
				c.failed(rec.ID, dutyPost)
				s.log.Error().Err(err).Str("ask", rec.ID).Msg("post of an ask left unposted failed")
			} else {
				c.succeeded(rec.ID, dutyPost)
			}
		}
		if at := copiesDue(rec); !at.IsZero() && !at.After(now) {
			if err := s.postCopies(ctx, rec); err != nil {
				c.failed(rec.ID, dutyCopy)
				s.log.Warn().Err(err).Str("ask", rec.ID).Msg("posting the ask's copies failed; retrying later")
			} else {
				c.succeeded(rec.ID, dutyCopy)
			}
		}
		switch {
		case rec.ExpiresAt != nil && !rec.ExpiresAt.After(now):
			s.expire(ctx, rec.ID)
		case rec.Posted() && !rec.RemindAt.IsZero() && !rec.Reminded && !rec.RemindAt.After(now):
			s.remind(ctx, rec.ID)
		}
	}
	if rec.Posted() && !rec.Synced {
		select {
		case <-s.recovered:
		default:
			// Claimed before recovery found it: left unsynced by an
			// earlier process, held as recovery holds it (recoverOne).
			c.hold(rec.ID)
		}
		// The claimed record may be older than a change this process
		// made and rendered since the claim: rendering it would draw an
		// older state (an ended ask live again) until the check after
		// it. The record is read again and marked as it stands.
		if cur, err := s.store.Get(ctx, rec.ID); err == nil && cur.Posted() && !cur.Synced {
			s.syncer.mark(cur)
		}
	}
	for _, d := range c.dutyList() {
		if at := d.When(rec); at.IsZero() || at.After(now) {
			continue
		}
		if err := d.Do(ctx, rec); err != nil {
			c.failed(rec.ID, d.Name)
			s.log.Warn().Err(err).Str("ask", rec.ID).Str("duty", d.Name).Msg("duty failed; retrying later")
		} else {
			c.succeeded(rec.ID, d.Name)
		}
	}
	s.rewake(context.WithoutCancel(ctx), rec.ID)
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// rewake stores the record's next WakeAt as nextWake computes it now (a
// write only when it differs).
func (s *Service) rewake(ctx context.Context, id string) {
	_, err := s.store.Update(ctx, id, func(r *Record) error {
		if r.WakeAt.Equal(s.nextWake(r)) {
			return errNoChange
		}
		return nil // wakeStore sets WakeAt
	})
	if err != nil && !errors.Is(err, errNoChange) && !isNotFound(err) {
		s.log.Error().Err(err).Str("ask", id).Msg("could not store the next wake-up")
	}
}

// wakeStore is the Service's view of its store: every record it creates
// or updates leaves with WakeAt = nextWake, so that the dispatcher of any
// replica finds what is due; an update that makes the message need
// drawing lists this process as drawing it (Record.Drawers).
type wakeStore struct {
	store.Store
	s *Service
}

func (w wakeStore) Create(ctx context.Context, r Record) (Record, bool, error) {
	markEvents(&r)
	r.WakeAt = w.s.nextWake(&r)
	rec, created, err := w.Store.Create(ctx, r)
	if err == nil && created {
		w.s.sched.noteWake(rec.WakeAt)
	}
	return rec, created, err
}

func (w wakeStore) Update(ctx context.Context, id string, fn func(*Record) error) (Record, error) {
	rec, err := w.Store.Update(ctx, id, func(r *Record) error {
		rev, synced, posted := r.Rev, r.Synced, r.Posted()
		if err := fn(r); err != nil {
			return err
		}
		if r.Posted() && !r.Synced && (r.Rev != rev || synced || !posted) {
			// The write makes the message need drawing, and this process
			// draws it next (syncer.mark follows every such write): it is
			// listed as drawing in the same write (drawers.go).
			w.s.listSelf(r, w.s.now())
		}
		markEvents(r)
		r.WakeAt = w.s.nextWake(r)
		return nil
	})
	if err == nil {
		w.s.sched.noteWake(rec.WakeAt)
	}
	return rec, err
}
