package bot

import (
	"context"
	"runtime"
	"time"

	"github.com/slackask/slackask/store"
)

// workSlots bounds the CPU-heavy work that follows acks — decoding
// payloads and the store's reads and writes (SQLite compiled to Go, and a
// JSON record each way) — to one goroutine less than GOMAXPROCS (at least
// one). Go's scheduler looks for ready network connections only when a P
// has nothing else to run (or every 10 ms from sysmon): with every P busy
// with store work, the Socket Mode reader waited for its frames that long,
// and acks with it (BENCHMARKS.md). With a P left over, the reader runs as
// soon as a frame arrives. Work waiting for a slot is parked, not runnable.
type workSlots chan struct{}

func newWorkSlots() workSlots { return make(workSlots, max(1, runtime.GOMAXPROCS(0)-1)) }

// acquire waits for a slot; false when ctx ended first.
func (w workSlots) acquire(ctx context.Context) bool {
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

func (w workSlots) release() { <-w }

// slottedStore runs each call of the store it wraps in a work slot. The
// functions given to Update must not call the store.
type slottedStore struct {
	store.Store
	slots workSlots
}

func (s slottedStore) Create(ctx context.Context, r store.Record) (store.Record, bool, error) {
	if !s.slots.acquire(ctx) {
		return store.Record{}, false, ctx.Err()
	}
	defer s.slots.release()
	return s.Store.Create(ctx, r)
}

func (s slottedStore) Get(ctx context.Context, id string) (store.Record, error) {
	if !s.slots.acquire(ctx) {
		return store.Record{}, ctx.Err()
	}
	defer s.slots.release()
	return s.Store.Get(ctx, id)
}

func (s slottedStore) Update(ctx context.Context, id string, fn func(*store.Record) error) (store.Record, error) {
	if !s.slots.acquire(ctx) {
		return store.Record{}, ctx.Err()
	}
	defer s.slots.release()
	return s.Store.Update(ctx, id, fn)
}

func (s slottedStore) List(ctx context.Context, f store.Filter) ([]store.Record, error) {
	if !s.slots.acquire(ctx) {
		return nil, ctx.Err()
	}
	defer s.slots.release()
	return s.Store.List(ctx, f)
}

func (s slottedStore) Pending(ctx context.Context) ([]store.Record, error) {
	if !s.slots.acquire(ctx) {
		return nil, ctx.Err()
	}
	defer s.slots.release()
	return s.Store.Pending(ctx)
}

func (s slottedStore) Prune(ctx context.Context, t time.Time) (int, error) {
	if !s.slots.acquire(ctx) {
		return 0, ctx.Err()
	}
	defer s.slots.release()
	return s.Store.Prune(ctx, t)
}
