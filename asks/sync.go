package asks

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/slackask/slackask/internal/backoff"
	"github.com/slackask/slackask/internal/clock"
)

// syncTries bounds the attempts to update one rendering of a message.
const syncTries = 5

// syncer brings posted messages in step with their records. It is handed
// the record of each change as stored (mark), so it reads nothing before
// rendering. Marks of one ask coalesce: however many changes arrive while
// an update is in flight, one more update follows it, rendering the newest
// record marked.
type syncer struct {
	s        *Service
	mu       sync.Mutex
	ctx      context.Context // set by run; nil before
	stopped  bool            // set by run once ctx ended: no new updates
	inflight map[string]bool
	latest   map[string]Record // the newest record marked and not yet rendered
	wg       sync.WaitGroup
}

func newSyncer(s *Service) *syncer {
	return &syncer{s: s, inflight: map[string]bool{}, latest: map[string]Record{}}
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
	y.latest[rec.ID] = rec
	if y.ctx == nil || y.inflight[rec.ID] {
		return // started by run, or by the update in flight when it ends
	}
	y.startLocked(rec.ID)
}

func (y *syncer) startLocked(id string) {
	if y.stopped || y.ctx.Err() != nil {
		return // stopping: the record stays unsynced and is updated at the next start
	}
	y.inflight[id] = true
	ctx := y.ctx
	y.wg.Go(func() { y.loop(ctx, id) })
}

func (y *syncer) loop(ctx context.Context, id string) {
	for {
		y.mu.Lock()
		rec, ok := y.latest[id]
		delete(y.latest, id)
		if !ok || ctx.Err() != nil {
			delete(y.inflight, id)
			y.mu.Unlock()
			return
		}
		y.mu.Unlock()
		y.syncWithRetry(ctx, rec)
	}
}

func (y *syncer) syncWithRetry(ctx context.Context, rec Record) {
	b := backoff.Backoff{Min: time.Second}
	for attempt := 1; ; attempt++ {
		err := y.s.syncMessage(ctx, rec)
		if err == nil || ctx.Err() != nil || attempt == syncTries {
			if err != nil && ctx.Err() == nil {
				y.s.log.Error().Err(err).Str("ask", rec.ID).Msg("message update given up")
			}
			return
		}
		y.s.log.Warn().Err(err).Str("ask", rec.ID).Int("attempt", attempt).Msg("message update failed")
		if !b.Wait(ctx) {
			return
		}
		y.mu.Lock()
		newer, ok := y.latest[rec.ID]
		y.mu.Unlock()
		if ok && newer.Version > rec.Version {
			return // the loop renders the newer record next
		}
	}
}

// syncMessage updates the message of rec to show it; once the update
// landed and the record has not moved on, the record is marked synced.
func (s *Service) syncMessage(ctx context.Context, rec Record) error {
	if rec.TS == "" || rec.Synced {
		return nil
	}
	if err := s.surface.Update(ctx, rec); err != nil {
		return err
	}
	s.stats.updates.Add(1)
	_, err := s.store.Update(context.WithoutCancel(ctx), rec.ID, func(r *Record) error {
		if r.Rev != rec.Rev || r.Synced {
			return errNoChange
		}
		r.Synced = true
		return nil
	})
	if errors.Is(err, errNoChange) || isNotFound(err) {
		return nil
	}
	return err
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
