package bot

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// actTimeout bounds the store work of one person act (a click or a form's
// submission). Slack wants the ack within 3 s; past this a store that does
// not answer (a database whose packets vanish) is given up on, and the
// envelope is left unacked instead of holding the ask's queue for as long
// as TCP takes to notice.
const actTimeout = 20 * time.Second

// gate holds a Bot's Socket Mode connections closed while its store cannot
// be reached: a replica that cannot store a click must not take it, so
// Slack sends the clicks to replicas that can (a click it cannot store it
// cannot ack, and Slack would show the person an error). The zero gate is
// open.
type gate struct {
	mu      sync.Mutex
	reason  error         // nil: open
	changed chan struct{} // closed (and replaced) at each change
}

// set closes the gate with reason (nil opens it) and reports whether that
// changed it.
func (g *gate) set(reason error) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if (g.reason == nil) == (reason == nil) {
		if reason != nil {
			g.reason = reason // the newest reason, for /readyz
		}
		return false
	}
	g.reason = reason
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
	return true
}

// state returns why the gate is closed (nil: open) and a channel closed at
// its next change.
func (g *gate) state() (reason error, changed <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	return g.reason, g.changed
}

// waitOpen returns true once the gate is open, false when ctx ends first.
func (g *gate) waitOpen(ctx context.Context) bool {
	for {
		reason, changed := g.state()
		if reason == nil {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// onClose calls fn once when the gate is closed (at once if it is), until
// stop is called.
func (g *gate) onClose(fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			reason, changed := g.state()
			if reason != nil {
				fn()
				return
			}
			select {
			case <-changed:
			case <-done:
				return
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

// StoreDown tells the Bot whether its store can be reached: with an error
// it gives up its Socket Mode connections (each closes once the envelopes
// read from it are settled) and opens none until StoreDown(nil), and Ready
// reports the error. It returns whether the state changed.
func (b *Bot) StoreDown(err error) bool {
	if err != nil {
		err = fmt.Errorf("store unreachable: %w", err)
	}
	return b.gate.set(err)
}
