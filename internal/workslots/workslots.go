// Package workslots bounds the CPU-heavy work that follows Socket Mode
// acks, so that the reader always finds a processor free.
package workslots

import (
	"context"
	"runtime"
)

// Slots bounds the CPU-heavy work that follows acks (decoding payloads,
// the store's work: store/slotted) to GOMAXPROCS−1 goroutines, so that a
// processor is always free for the Socket Mode reader, whose acks then
// never queue behind that work (the measurements: 307019a).
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
