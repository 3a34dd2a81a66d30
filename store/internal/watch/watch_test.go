package watch

import (
	"fmt"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/slackask/slackask/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A watcher gets every change in the order published, even while another
// watcher is blocked; Close waits for the watchers' goroutines.
func TestOrderAndIsolation(t *testing.T) {
	var h Hub
	release := make(chan struct{})
	defer h.Watch(func(store.Change) { <-release })() // a slow watcher
	const n = 1000
	got := make(chan store.Change, n)
	h.Watch(func(c store.Change) { got <- c })
	for i := range n {
		h.Publish(store.Change{ID: fmt.Sprint(i), Version: int64(i)})
	}
	for i := range n {
		if c := <-got; c.Version != int64(i) {
			t.Fatalf("change %d arrived as number %d", c.Version, i)
		}
	}
	close(release)
	h.Close()
}

// stop may be called from fn and more than once; after it returns no new
// call starts; Close and Watch after Close are harmless.
func TestStop(t *testing.T) {
	var h Hub
	var (
		mu    sync.Mutex
		calls int
		stop  func()
	)
	first := make(chan struct{})
	stop = h.Watch(func(store.Change) {
		mu.Lock()
		calls++
		mu.Unlock()
		stop() // from inside fn: must not deadlock
		close(first)
	})
	sentinel := make(chan struct{}, 2)
	h.Watch(func(store.Change) { sentinel <- struct{}{} })
	h.Publish(store.Change{ID: "a"})
	<-first
	<-sentinel
	stop()
	h.Publish(store.Change{ID: "b"})
	<-sentinel
	h.Close()
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("a stopped watcher was called %d times, want 1", calls)
	}
	h.Watch(func(store.Change) { t.Error("called after Close") })()
	h.Publish(store.Change{ID: "c"})
	h.Close()
}
