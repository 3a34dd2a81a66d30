package httpapi

import (
	"net"
	"net/http"
	"sync"
)

// DefaultMaxActive is how many connections serve lets be busy at once: see
// LimitActive.
const DefaultMaxActive = 1024

// LimitActive returns ln with an Accept that waits while n connections it
// accepted are busy — not yet idle between requests, hijacked (a parked
// long-poll) or closed — and sets srv.ConnState (chaining a hook already
// there) to keep count; serve srv on the returned listener. A busy
// connection holds a goroutine and net/http's buffers, about 20 KB; when
// 10,000 long-polls arrived at once faster than they could be parked, the
// ones waiting their turn set the peak: 78-218 MB resident over ten
// benchmark runs, for 58-120 MB once they were parked. With the limit the
// rest wait in the kernel's accept queue, which costs the process nothing:
// 99-104 MB at the peak over three runs (BENCHMARKS.md). An idle keep-alive connection that sends another request
// is counted again without waiting, so the count can pass n for a moment.
func LimitActive(ln net.Listener, srv *http.Server, n int) net.Listener {
	l := &activeLimiter{Listener: ln, max: max(1, n), busy: map[net.Conn]bool{}}
	l.cond = sync.NewCond(&l.mu)
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		l.state(c, s)
		if prev != nil {
			prev(c, s)
		}
	}
	return l
}

type activeLimiter struct {
	net.Listener
	mu     sync.Mutex
	cond   *sync.Cond
	max    int
	busy   map[net.Conn]bool // accepted connections counted as busy
	closed bool
}

// Accept waits for a free place, then accepts. Its errors are the
// listener's.
func (l *activeLimiter) Accept() (net.Conn, error) {
	l.mu.Lock()
	for len(l.busy) >= l.max && !l.closed {
		l.cond.Wait()
	}
	l.mu.Unlock()
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	l.mu.Lock()
	l.busy[c] = true
	l.mu.Unlock()
	return c, nil
}

func (l *activeLimiter) state(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateActive:
		l.busy[c] = true
	case http.StateIdle, http.StateHijacked, http.StateClosed:
		if l.busy[c] {
			delete(l.busy, c)
			l.cond.Signal()
		}
	}
}

// Close closes the listener and lets a waiting Accept return its error.
func (l *activeLimiter) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}
