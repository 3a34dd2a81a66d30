// Package workslots bounds the CPU-heavy work that follows Socket Mode
// acks, so that the reader always finds a processor free.
package workslots

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/slackask/slackask/store"
)

// Slots bounds the CPU-heavy work that follows acks — decoding payloads
// and the store's reads and writes (SQLite compiled to Go, and a JSON
// record each way) — to one goroutine less than GOMAXPROCS (at least one).
// Go's scheduler looks for ready network connections only when a P has
// nothing else to run (or every 10 ms from sysmon): with every P busy with
// store work, the Socket Mode reader would wait for its frames that long,
// and acks with it. With a P left over, the reader runs as soon as a frame
// arrives. Work waiting for a slot is parked, not runnable.
type Slots chan struct{}

// New returns the slots of this process: GOMAXPROCS−1, at least one.
func New() Slots { return make(Slots, max(1, runtime.GOMAXPROCS(0)-1)) }

// Acquire waits for a slot; false when ctx ended first.
func (w Slots) Acquire(ctx context.Context) bool {
	select {
	case w <- struct{}{}:
		return true
	default:
	}
	select {
	case w <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// Release gives a slot back.
func (w Slots) Release() { <-w }

// Store returns st with each call run in a slot. The functions given to
// its Update must not call the store.
//
// When st is a store.Batcher, the Updates that wait for a slot are run
// together: the first of them to get one runs every Update queued by then
// in one UpdateBatch, and the others find theirs done. Under load the
// queue forms exactly here, so that is where one commit is shared.
//
// Under sustained concurrent load the first also lingers: when the
// previous batch ended less than busyWindow ago and a batch of more than
// one ran less than crowdWindow ago, it holds the slot for linger before
// it takes the queue, so that the Updates arriving meanwhile share its
// commit. Clicks come spread out, each one's work shorter than the gap to
// the next, so without the wait most batches are of one even at thousands
// a second. One caller updating in sequence (a person's clicks on one
// ask, a script) never makes a batch of two, and never waits.
func (w Slots) Store(st store.Store) store.Store {
	s := &slottedStore{Store: st, slots: w}
	s.batcher, _ = st.(store.Batcher)
	return s
}

// The linger of a Batcher's Updates (see Slots.Store). It happens only
// under load, and adds at most linger to what waits for it: a click's
// answer (its ack does not wait: the click is durable in the journal
// first), and the slot's other work meanwhile, among it the decode and
// store write a modal submission's ack waits for.
const (
	busyWindow  = 2 * time.Millisecond
	crowdWindow = 5 * time.Millisecond
	linger      = 500 * time.Microsecond
)

type slottedStore struct {
	store.Store
	slots   Slots
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
// runs the queue (see Slots.Store).
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
