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
		b.posted.drop(id)
		cur, gerr := b.store.Get(ctx, id)
		if gerr != nil {
			return cur, fmt.Errorf("end %s: %w", id, gerr)
		}
		return cur, errEnded
	}
	if err != nil {
		return rec, fmt.Errorf("end %s: %w", id, err)
	}
	b.posted.drop(id)
	b.stats.ended(rec.Status)
	b.waiters.wake(store.Clone(rec).Ask)
	b.syncer.mark(id)
	b.log.Info().Str("ask", id).Str("status", string(rec.Status)).Msg("ask ended")
	if b.cfg.OnEnd != nil {
		b.cfg.OnEnd(rec.Ask)
	}
	return rec, nil
}

// waiters wakes the callers blocked in Wait when an ask ends, handing
// them the ended ask so that none has to read it again.
type waiters struct {
	mu   sync.Mutex
	next int
	m    map[string]map[int]*waiter
}

// waiter is one caller waiting for an ask to end: done is closed once ask
// holds the ended ask (read-only: every waiter of the ask shares it), or,
// for a waiter registered with Notify, fn is called instead.
type waiter struct {
	done chan struct{}
	ask  interaction.Ask
	fn   func(interaction.Ask)
}

func (w *waiters) init() { w.m = map[string]map[int]*waiter{} }

// add registers a waiter for id; cancel unregisters it.
func (w *waiters) add(id string) (wt *waiter, cancel func()) {
	wt = &waiter{done: make(chan struct{})}
	return wt, w.register(id, wt)
}

// register adds wt to id's waiters and returns the idempotent cancel.
func (w *waiters) register(id string, wt *waiter) (cancel func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	n := w.next
	if w.m[id] == nil {
		w.m[id] = map[int]*waiter{}
	}
	w.m[id][n] = wt
	return func() {
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

// wake hands ask, which has ended, to every waiter of it.
func (w *waiters) wake(ask interaction.Ask) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wt := range w.m[ask.ID] {
		if wt.fn != nil {
			wt.fn(ask)
			continue
		}
		wt.ask = ask
		close(wt.done)
	}
	delete(w.m, ask.ID)
}
