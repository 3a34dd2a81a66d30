package bot

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// errEnded is returned by state changes on an ask that has already ended.
var errEnded = errors.New("bot: the ask has already ended")

// ending describes how an ask ends.
type ending struct {
	status interaction.Status
	by     *interaction.User
	err    *interaction.Error
	note   string
	// mutate runs inside the compare-and-set before the answer is built.
	mutate func(*store.Record)
}

// end ends a pending ask exactly once: the first end wins, every later one
// gets errEnded together with the record as it stands. On success it wakes
// the waiters, drops the ask's timers and queues the message update.
func (b *Bot) end(ctx context.Context, id string, e ending) (store.Record, error) {
	rec, err := b.store.Update(ctx, id, func(r *store.Record) error {
		if r.Status.Ended() {
			return errEnded
		}
		if e.mutate != nil {
			e.mutate(r)
		}
		now := b.now()
		r.Status, r.EndedAt, r.Note = e.status, &now, e.note
		if e.status == interaction.StatusAnswered {
			ans := interaction.AnswerFrom(r.Request(), r.Progress)
			r.Answer, r.AnsweredBy = &ans, e.by
		} else {
			r.Error, r.EndedBy = e.err, e.by
		}
		r.Rev++
		r.Synced = false
		return nil
	})
	if errors.Is(err, errEnded) {
		cur, gerr := b.store.Get(ctx, id)
		if gerr != nil {
			return cur, fmt.Errorf("end %s: %w", id, gerr)
		}
		return cur, errEnded
	}
	if err != nil {
		return rec, fmt.Errorf("end %s: %w", id, err)
	}
	b.stats.ended(rec.Status)
	b.waiters.wake(id)
	b.syncer.mark(id)
	b.log.Info().Str("ask", id).Str("status", string(rec.Status)).Msg("ask ended")
	if b.cfg.OnEnd != nil {
		b.cfg.OnEnd(rec.Ask)
	}
	return rec, nil
}

// waiters wakes the callers blocked in Wait when an ask ends.
type waiters struct {
	mu   sync.Mutex
	next int
	m    map[string]map[int]chan struct{}
}

func (w *waiters) init() { w.m = map[string]map[int]chan struct{}{} }

func (w *waiters) add(id string) (<-chan struct{}, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	n := w.next
	ch := make(chan struct{})
	if w.m[id] == nil {
		w.m[id] = map[int]chan struct{}{}
	}
	w.m[id][n] = ch
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if set := w.m[id]; set != nil {
			delete(set, n)
			if len(set) == 0 {
				delete(w.m, id)
			}
		}
	}
}

func (w *waiters) wake(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range w.m[id] {
		close(ch)
	}
	delete(w.m, id)
}
