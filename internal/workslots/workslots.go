// Package workslots bounds the CPU-heavy work that follows Socket Mode
// acks, so that the reader always finds a processor free.
package workslots

import (
	"context"
	"runtime"
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
func (w Slots) Store(st store.Store) store.Store { return slottedStore{Store: st, slots: w} }

type slottedStore struct {
	store.Store
	slots Slots
}

func (s slottedStore) Create(ctx context.Context, r store.Record) (store.Record, bool, error) {
	if !s.slots.Acquire(ctx) {
		return store.Record{}, false, ctx.Err()
	}
	defer s.slots.Release()
	return s.Store.Create(ctx, r)
}

func (s slottedStore) Get(ctx context.Context, id string) (store.Record, error) {
	if !s.slots.Acquire(ctx) {
		return store.Record{}, ctx.Err()
	}
	defer s.slots.Release()
	return s.Store.Get(ctx, id)
}

func (s slottedStore) Update(ctx context.Context, id string, fn func(*store.Record) error) (store.Record, error) {
	if !s.slots.Acquire(ctx) {
		return store.Record{}, ctx.Err()
	}
	defer s.slots.Release()
	return s.Store.Update(ctx, id, fn)
}

func (s slottedStore) List(ctx context.Context, f store.Filter) ([]store.Record, error) {
	if !s.slots.Acquire(ctx) {
		return nil, ctx.Err()
	}
	defer s.slots.Release()
	return s.Store.List(ctx, f)
}

func (s slottedStore) Pending(ctx context.Context) ([]store.Record, error) {
	if !s.slots.Acquire(ctx) {
		return nil, ctx.Err()
	}
	defer s.slots.Release()
	return s.Store.Pending(ctx)
}

func (s slottedStore) Prune(ctx context.Context, t time.Time) (int, error) {
	if !s.slots.Acquire(ctx) {
		return 0, ctx.Err()
	}
	defer s.slots.Release()
	return s.Store.Prune(ctx, t)
}
