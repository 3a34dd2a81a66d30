package bot

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
)

// syncer brings Slack messages in step with their records. Marks of one
// ask coalesce: however many changes arrive while an update is in flight,
// one more update follows it, rendering the latest record.
type syncer struct {
	b        *Bot
	mu       sync.Mutex
	ctx      context.Context // set by run; nil before
	stopped  bool            // set by run once ctx ended: no new updates
	inflight map[string]bool
	dirty    map[string]bool
	wg       sync.WaitGroup
}

func newSyncer(b *Bot) *syncer {
	return &syncer{b: b, inflight: map[string]bool{}, dirty: map[string]bool{}}
}

// run lets marks start updates until ctx ends, then waits for them.
func (s *syncer) run(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	queued := make([]string, 0, len(s.dirty))
	for id := range s.dirty {
		queued = append(queued, id)
	}
	s.dirty = map[string]bool{}
	s.mu.Unlock()
	for _, id := range queued {
		s.mark(id)
	}
	<-ctx.Done()
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.wg.Wait()
}

// mark asks for the message of id to be updated.
func (s *syncer) mark(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || s.inflight[id] {
		s.dirty[id] = true
		return
	}
	if s.stopped || s.ctx.Err() != nil {
		return // stopping: the record stays unsynced and is updated at the next start
	}
	s.inflight[id] = true
	ctx := s.ctx
	s.wg.Go(func() { s.loop(ctx, id) })
}

func (s *syncer) loop(ctx context.Context, id string) {
	for {
		s.syncWithRetry(ctx, id)
		s.mu.Lock()
		if s.dirty[id] && ctx.Err() == nil {
			delete(s.dirty, id)
			s.mu.Unlock()
			continue
		}
		delete(s.inflight, id)
		s.mu.Unlock()
		return
	}
}

func (s *syncer) syncWithRetry(ctx context.Context, id string) {
	backoff := time.Second
	for attempt := 0; attempt < 5; attempt++ {
		err := s.b.syncMessage(ctx, id)
		if err == nil || errors.Is(err, errNothingToSync) || ctx.Err() != nil {
			return
		}
		s.b.log.Warn().Err(err).Str("ask", id).Int("attempt", attempt+1).Msg("message update failed")
		if !clock.Sleep(ctx, backoff) {
			return
		}
		backoff *= 2
	}
}

var errNothingToSync = errors.New("nothing to sync")

// syncMessage renders the record as it is now and updates its message;
// when the update lands and the record has not moved on, it is marked
// synced.
func (b *Bot) syncMessage(ctx context.Context, id string) error {
	rec, err := b.store.Get(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return errNothingToSync
		}
		return err
	}
	if rec.TS == "" || rec.Synced {
		return errNothingToSync
	}
	text, blks := blocks.Message(b.view(rec))
	err = b.call(ctx, "chat.update", func(ctx context.Context) error {
		_, _, _, err := b.api.UpdateMessageContext(ctx, rec.Channel, rec.TS,
			slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blks...))
		return err
	})
	if err != nil {
		return err
	}
	b.stats.Updates.Add(1)
	_, err = b.store.Update(context.WithoutCancel(ctx), id, func(r *store.Record) error {
		if r.Rev == rec.Rev {
			r.Synced = true
		}
		return nil
	})
	return err
}

// waitIdle blocks until no update is in flight or ctx ends.
func (s *syncer) waitIdle(ctx context.Context) {
	for ctx.Err() == nil {
		s.mu.Lock()
		n := len(s.inflight)
		s.mu.Unlock()
		if n == 0 {
			return
		}
		clock.Sleep(ctx, 50*time.Millisecond)
	}
}
