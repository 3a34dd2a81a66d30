package asks

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// scheduler fires deadlines and reminders at their stored times on the
// service's clock. Everything it needs is in the records, so a restart
// rebuilds it from Store.Pending. Timers of asks that ended are not
// searched out of the heap: they fire as no-ops (expire and remind check
// the record), which keeps every end O(1) however many asks wait.
type scheduler struct {
	s    *Service
	mu   sync.Mutex
	h    timerHeap
	kick chan struct{}
}

type timerKind int

const (
	timerExpire timerKind = iota
	timerRemind
)

type timer struct {
	at   time.Time
	id   string
	kind timerKind
}

type timerHeap []timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}

func newScheduler(s *Service) *scheduler {
	return &scheduler{s: s, kick: make(chan struct{}, 1)}
}

// add schedules the record's deadline and reminder, if any.
func (c *scheduler) add(r Record) {
	c.mu.Lock()
	if r.ExpiresAt != nil {
		heap.Push(&c.h, timer{at: *r.ExpiresAt, id: r.ID, kind: timerExpire})
	}
	if !r.RemindAt.IsZero() && !r.Reminded {
		heap.Push(&c.h, timer{at: r.RemindAt, id: r.ID, kind: timerRemind})
	}
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *scheduler) run(ctx context.Context) {
	for {
		due, wait := c.next()
		for _, t := range due {
			c.fire(ctx, t)
		}
		if len(due) > 0 {
			continue
		}
		var after <-chan time.Time
		if wait >= 0 {
			after = c.s.clock.After(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		case <-after:
		}
	}
}

// next pops the timers that are due and says how long until the next one
// (-1: none).
func (c *scheduler) next() ([]timer, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.s.clock.Now()
	var due []timer
	for len(c.h) > 0 && !c.h[0].at.After(now) {
		due = append(due, heap.Pop(&c.h).(timer))
	}
	if len(c.h) == 0 {
		return due, -1
	}
	return due, c.h[0].at.Sub(now)
}

func (c *scheduler) fire(ctx context.Context, t timer) {
	switch t.kind {
	case timerExpire:
		c.s.expire(ctx, t.id)
	case timerRemind:
		c.s.bg.Go(func() { c.s.remind(ctx, t.id) })
	}
}

// expire ends a pending ask whose deadline has passed.
func (s *Service) expire(ctx context.Context, id string) {
	_, err := s.end(ctx, id, ending{
		status: interaction.StatusExpired,
		err:    interaction.Errorf(interaction.AskTimeout, "nobody answered before the deadline"),
	})
	if err != nil && !errors.Is(err, ErrEnded) {
		s.log.Error().Err(err).Str("ask", id).Msg("expire failed")
	}
}

// remind posts the ask's one reminder. The reminder is marked sent before
// posting: a crash in between loses a reminder rather than sending two.
func (s *Service) remind(ctx context.Context, id string) {
	rec, err := s.store.Update(ctx, id, func(r *Record) error {
		if r.Status.Ended() || r.Reminded || r.TS == "" {
			return errNoChange
		}
		r.Reminded = true
		return nil
	})
	if err != nil {
		return
	}
	if err := s.surface.Remind(ctx, rec); err != nil {
		s.log.Warn().Err(err).Str("ask", id).Msg("reminder failed")
	}
}

// recover picks up what an earlier process left: asks accepted but never
// posted are posted (or their earlier post adopted), deadlines that passed
// while down end their asks, the rest are scheduled, and asks whose last
// change never reached the message are updated.
func (s *Service) recover(ctx context.Context) {
	start := s.now()
	pending, err := s.store.Pending(ctx)
	if err != nil {
		s.log.Error().Err(err).Msg("recover: list pending asks")
		return
	}
	for _, rec := range pending {
		s.recoverPending(ctx, rec, start)
	}
	const page = 1000
	for round := 0; round < 100; round++ {
		unsynced, err := s.store.List(ctx, store.Filter{Unsynced: true, Limit: page})
		if err != nil {
			s.log.Error().Err(err).Msg("recover: list unsynced asks")
			return
		}
		for _, rec := range unsynced {
			s.syncer.mark(rec)
		}
		if len(unsynced) < page || ctx.Err() != nil {
			break
		}
		s.syncer.waitIdle(ctx)
	}
	s.log.Info().Int("pending", len(pending)).Msg("recovered asks from the store")
}

func (s *Service) recoverPending(ctx context.Context, rec Record, start time.Time) {
	if rec.TS == "" {
		if !rec.CreatedAt.Before(start) {
			return // being posted by this process right now
		}
		var err error
		if rec.User != "" && !interaction.IsConversationID(rec.Channel) {
			rec, err = s.openDM(ctx, rec)
		}
		if err == nil {
			rec, err = s.adoptOrPost(ctx, rec)
		}
		if err != nil {
			s.log.Error().Err(err).Str("ask", rec.ID).Msg("recover: post")
			return
		}
	}
	if rec.ExpiresAt != nil && !rec.ExpiresAt.After(s.now()) {
		s.expire(ctx, rec.ID)
		return
	}
	if !rec.Synced {
		s.syncer.mark(rec)
	}
	s.sched.add(rec)
}

// adoptOrPost finishes an ask whose post may or may not have reached the
// surface before the process died: an earlier message of the ask is
// adopted (its ts stored, the message re-rendered), else it is posted.
func (s *Service) adoptOrPost(ctx context.Context, rec Record) (Record, error) {
	ts, err := s.surface.FindPosted(ctx, rec)
	if err != nil {
		s.log.Warn().Err(err).Str("ask", rec.ID).Msg("recover: could not look for an earlier post; posting")
	}
	if ts == "" {
		return s.post(ctx, rec)
	}
	return s.store.Update(ctx, rec.ID, func(r *Record) error {
		r.TS, r.Rev, r.Synced = ts, r.Rev+1, false
		return nil
	})
}

func isNotFound(err error) bool {
	return err != nil && interaction.ErrorCode(err) == interaction.NotFound
}
