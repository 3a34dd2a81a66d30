// Package slotted runs a store's work in the process's work slots
// (internal/workslots), sharing one commit among the Updates that wait for
// a slot.
package slotted

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/slackask/slackask/internal/workslots"
	"github.com/slackask/slackask/store"
)

// New returns st with each call run in one of slots. The functions given
// to its Update must not call the store. When st is a store.Batcher, the
// Updates waiting for a slot run together in one UpdateBatch (one commit),
// and under sustained load the first one lingers so that the Updates
// arriving meanwhile share it; one caller updating in sequence never
// waits.
func New(st store.Store, slots workslots.Slots) store.Store {
	s := &slottedStore{Store: st, slots: slots}
	s.batcher, _ = st.(store.Batcher)
	return s
}

// When the linger applies (see New): it adds at most linger to what waits
// for it (an answer; a click's ack does not wait, it is journaled first).
const (
	busyWindow  = 2 * time.Millisecond
	crowdWindow = 5 * time.Millisecond
	linger      = 500 * time.Microsecond
)

type slottedStore struct {
	store.Store
	slots   workslots.Slots
	batcher store.Batcher // st's, or nil

	mu     sync.Mutex
	queued []*queuedUpdate // Updates waiting for a slot, in order, under mu
	// lastEnd is when the last batch ended, lastCrowd when the last batch
	// of more than one began.
	lastEnd, lastCrowd time.Time
}

// queuedUpdate is an Update waiting in slottedStore.queued; done is closed
// once op holds its result.
type queuedUpdate struct {
	op   store.UpdateOp
	done chan struct{}
}

func (s *slottedStore) Create(ctx context.Context, r store.Record) (store.Record, bool, error) {
	if !s.slots.Acquire(ctx) {
		return store.Record{}, false, ctx.Err()
	}
	defer s.slots.Release()
	return s.Store.Create(ctx, r)
}

func (s *slottedStore) Get(ctx context.Context, id string) (store.Record, error) {
	if !s.slots.Acquire(ctx) {
		return store.Record{}, ctx.Err()
	}
	defer s.slots.Release()
	return s.Store.Get(ctx, id)
}

func (s *slottedStore) Update(ctx context.Context, id string, fn func(*store.Record) error) (store.Record, error) {
	if s.batcher == nil {
		if !s.slots.Acquire(ctx) {
			return store.Record{}, ctx.Err()
		}
		defer s.slots.Release()
		return s.Store.Update(ctx, id, fn)
	}
	u := &queuedUpdate{op: store.UpdateOp{Ctx: ctx, ID: id, Fn: fn}, done: make(chan struct{})}
	s.mu.Lock()
	s.queued = append(s.queued, u)
	s.mu.Unlock()
	select {
	case s.slots <- struct{}{}:
		// The wait is bounded and not the caller's to cut short: the
		// queue holds other callers' Updates, which this one runs.
		if s.shouldLinger(time.Now()) {
			time.Sleep(linger)
		}
		s.runQueued()
		s.slots.Release()
	case <-u.done:
	case <-ctx.Done():
		if s.unqueue(u) {
			return store.Record{}, ctx.Err()
		}
	}
	<-u.done // run by this goroutine, or another that had a slot
	return u.op.Rec, u.op.Err
}

// shouldLinger reports whether a slot's winner, at now, lingers before it
// runs the queue (see New).
func (s *slottedStore) shouldLinger(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.lastEnd.IsZero() && now.Sub(s.lastEnd) < busyWindow &&
		!s.lastCrowd.IsZero() && now.Sub(s.lastCrowd) < crowdWindow
}

// runQueued runs every queued Update in one batch (in a slot).
func (s *slottedStore) runQueued() {
	s.mu.Lock()
	batch := s.queued
	s.queued = nil
	if len(batch) > 1 {
		s.lastCrowd = time.Now()
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.lastEnd = time.Now()
		s.mu.Unlock()
	}()
	if len(batch) == 0 {
		return // another goroutine with a slot ran them
	}
	ops := make([]*store.UpdateOp, len(batch))
	for i, u := range batch {
		ops[i] = &u.op
	}
	s.batcher.UpdateBatch(ops)
	for _, u := range batch {
		close(u.done)
	}
}

// unqueue takes u out of the queue; false when a batch took it first.
func (s *slottedStore) unqueue(u *queuedUpdate) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.queued, u); i >= 0 {
		s.queued = slices.Delete(s.queued, i, i+1)
		return true
	}
	return false
}

func (s *slottedStore) List(ctx context.Context, f store.Filter) ([]store.Record, error) {
	if !s.slots.Acquire(ctx) {
		return nil, ctx.Err()
	}
	defer s.slots.Release()
	return s.Store.List(ctx, f)
}

func (s *slottedStore) Pending(ctx context.Context) ([]store.Record, error) {
	if !s.slots.Acquire(ctx) {
		return nil, ctx.Err()
	}
	defer s.slots.Release()
	return s.Store.Pending(ctx)
}

func (s *slottedStore) Prune(ctx context.Context, t time.Time) (int, error) {
	if !s.slots.Acquire(ctx) {
		return 0, ctx.Err()
	}
	defer s.slots.Release()
	return s.Store.Prune(ctx, t)
}
