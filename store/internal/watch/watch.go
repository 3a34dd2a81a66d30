// Package watch fans store.Change values out to the watchers of a Store
// (store.Store.Watch). Publish never blocks: each watcher has its own queue
// and goroutine, so a slow watcher delays only itself, and the changes reach
// each watcher in the order they were published.
package watch

import (
	"sync"

	"github.com/slackask/slackask/store"
)

// Hub is a set of watchers. The zero value is ready to use.
type Hub struct {
	mu     sync.Mutex
	ws     map[*watcher]struct{}
	closed bool
	wg     sync.WaitGroup
}

type watcher struct {
	fn      func(store.Change)
	mu      sync.Mutex
	cond    *sync.Cond
	queue   []store.Change
	stopped bool
}

// Watch adds fn (see store.Store.Watch). On a closed Hub, fn is never
// called and stop does nothing.
func (h *Hub) Watch(fn func(store.Change)) (stop func()) {
	w := &watcher{fn: fn}
	w.cond = sync.NewCond(&w.mu)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return func() {}
	}
	if h.ws == nil {
		h.ws = map[*watcher]struct{}{}
	}
	h.ws[w] = struct{}{}
	h.wg.Go(w.run)
	return func() {
		h.mu.Lock()
		delete(h.ws, w)
		h.mu.Unlock()
		w.stop()
	}
}

// Publish queues c for every watcher.
func (h *Hub) Publish(c store.Change) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.ws {
		w.push(c)
	}
}

// Close stops every watcher and waits for their goroutines to return. It
// must not be called from a watcher's fn.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	ws := h.ws
	h.ws = nil
	h.mu.Unlock()
	for w := range ws {
		w.stop()
	}
	h.wg.Wait()
}

func (w *watcher) push(c store.Change) {
	w.mu.Lock()
	if !w.stopped {
		w.queue = append(w.queue, c)
		w.cond.Signal()
	}
	w.mu.Unlock()
}

func (w *watcher) stop() {
	w.mu.Lock()
	w.stopped = true
	w.queue = nil
	w.cond.Signal()
	w.mu.Unlock()
}

// run calls fn for each queued change, one at a time, until stopped. The
// stopped flag is checked before every call, so no call starts after stop.
func (w *watcher) run() {
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.stopped {
			w.cond.Wait()
		}
		if w.stopped {
			w.mu.Unlock()
			return
		}
		c := w.queue[0]
		w.queue[0] = store.Change{}
		w.queue = w.queue[1:]
		w.mu.Unlock()
		w.fn(c)
	}
}
