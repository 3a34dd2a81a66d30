package watch

import "sync"

// Acks fans the relayed acks of a store (store.AckRelay.WatchAcks) out to
// their watchers. Publish calls each watcher's fn on the publisher's
// goroutine, under Acks' lock: one call at a time, so fn must not block nor
// call stop; a stop returns once a call in progress has returned. The zero
// value is ready to use.
type Acks struct {
	mu     sync.Mutex
	fns    map[*func(origin, id string)]struct{}
	closed bool
}

// Watch adds fn; on a closed Acks, fn is never called.
func (a *Acks) Watch(fn func(origin, id string)) (stop func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return func() {}
	}
	if a.fns == nil {
		a.fns = map[*func(origin, id string)]struct{}{}
	}
	key := &fn
	a.fns[key] = struct{}{}
	return func() {
		a.mu.Lock()
		delete(a.fns, key)
		a.mu.Unlock()
	}
}

// Publish calls every watcher with a relayed ack.
func (a *Acks) Publish(origin, id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for fn := range a.fns {
		(*fn)(origin, id)
	}
}

// Close removes every watcher; later Watch calls add none.
func (a *Acks) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed, a.fns = true, nil
}
