package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/slackask/slackask/interaction"
)

// DefaultMaxActive is how many connections serve lets be busy at once: see
// LimitActive.
const DefaultMaxActive = 1024

// When every place for header-reading connections is taken (see
// LimitActive), a connection that has sent part of its headers may be
// closed for a newer one once the server, blocked reading the rest, has
// waited readerGrace since its first bytes came, and one that has sent
// nothing once it has waited silentGrace since the server's first read.
// Clients send their headers in one go, most often in one packet: a
// connection whose headers stop halfway is the mark of a client holding a
// place on purpose, while one that has sent nothing may be an honest
// client its own machine or network has delayed.
const (
	readerGrace = 50 * time.Millisecond
	silentGrace = time.Second
)

// LimitActive returns ln wrapped so that neither a burst of callers nor
// slow or waiting ones can take every place of the server, and sets
// srv.ConnState and srv.ConnContext (chaining hooks already there) to keep
// count; serve srv on the returned listener. It keeps three counts:
//
//   - busy: connections whose request was read and whose handler runs.
//     Accept waits while n are busy, so that a burst of callers waits in
//     the kernel's accept queue, which costs the process nothing, rather
//     than as goroutines and net/http's buffers. An idle keep-alive
//     connection that sends another request is counted again without
//     waiting, so the count can pass n for a moment.
//   - reading: accepted connections whose first request's headers have not
//     all arrived. At most max(1, n/4) of them; when that many are reading,
//     one is closed to make room for the next: one whose server is blocked
//     reading the rest of its headers readerGrace after its first bytes
//     came, else one that has sent nothing silentGrace after the server's
//     first read. A connection the server has not read from yet (its
//     goroutine not yet run, in a burst), or whose bytes it is parsing
//     (however late they came), is never closed so. Clients that dribble
//     their headers thus cannot keep /healthz and /readyz out;
//     srv.ReadHeaderTimeout bounds them when they are few.
//   - waiting: long-polls blocked in AskService.Wait (a service without
//     Notifier). They leave the busy count while they wait, at most n of
//     them; past that a long-poll answers at once with the ask as it
//     stands, as when its wait elapses.
//
// Parked long-polls (hijacked) and idle keep-alive connections count in
// none. The listener also answers net/http's own refusals that come before
// any handler (431 headers too large, 400 malformed request) with the JSON
// error shape instead of net/http's plain text.
func LimitActive(ln net.Listener, srv *http.Server, n int) net.Listener {
	n = max(1, n)
	l := &activeLimiter{
		Listener: ln, max: n, maxReading: max(1, n/4), grace: readerGrace, silent: silentGrace,
		maxHeaderBytes: srv.MaxHeaderBytes,
		reading:        map[net.Conn]*guardedConn{}, busy: map[net.Conn]bool{}, waiting: map[net.Conn]bool{},
	}
	l.cond = sync.NewCond(&l.mu)
	prevState := srv.ConnState
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		l.state(c, s)
		if prevState != nil {
			prevState(c, s)
		}
	}
	prevCtx := srv.ConnContext
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if prevCtx != nil {
			ctx = prevCtx(ctx, c)
		}
		return context.WithValue(ctx, slotKey{}, &slot{l: l, c: c})
	}
	return l
}

type activeLimiter struct {
	net.Listener
	maxHeaderBytes int // srv's, for the 431 message

	mu         sync.Mutex
	cond       *sync.Cond
	max        int                       // busy and, apart, waiting connections
	maxReading int                       // connections reading their first headers
	grace      time.Duration             // readerGrace; tests shorten it
	silent     time.Duration             // silentGrace; tests shorten it
	reading    map[net.Conn]*guardedConn // accepted, first headers not read
	busy       map[net.Conn]bool         // a handler runs
	waiting    map[net.Conn]bool         // a handler is blocked in a long-poll
	closed     bool
	evicted    int // readers closed to make room
	held       int // times Accept waited for a busy place
}

// Accept waits for a place (see LimitActive), then accepts. Its errors are
// the listener's.
func (l *activeLimiter) Accept() (net.Conn, error) {
	l.mu.Lock()
	for !l.closed {
		if len(l.busy) >= l.max {
			l.held++
			l.cond.Wait()
			continue
		}
		if len(l.reading) < l.maxReading {
			break
		}
		victim, due := l.nextEviction()
		wait := l.grace // no reader read from yet: look again then
		if victim != nil {
			wait = time.Until(due)
			if wait <= 0 {
				delete(l.reading, victim)
				l.evicted++
				_ = victim.Close() // its server goroutine sees the error and ends
				continue
			}
		}
		t := time.AfterFunc(wait, l.cond.Broadcast)
		l.cond.Wait()
		t.Stop()
	}
	l.mu.Unlock()
	c, err := l.Listener.Accept()
	if err != nil {
		return c, err
	}
	gc := &guardedConn{Conn: c, maxHeaderBytes: l.maxHeaderBytes}
	l.mu.Lock()
	l.reading[gc] = gc
	l.mu.Unlock()
	return gc, nil
}

// nextEviction returns the reading connection that may be closed first
// for a newer one, and from when: readerGrace after its first bytes came
// when it has sent part of its headers, silentGrace after the server's
// first read when it has sent nothing. Only a connection the server is
// blocked reading from is a candidate: one whose bytes the server is
// parsing (its Read returned, StateActive not yet set) has not stalled,
// however late its bytes came, and closing it would cut a caller that
// sent its whole request at once. Nil when none qualifies. l.mu held.
func (l *activeLimiter) nextEviction() (net.Conn, time.Time) {
	var (
		victim net.Conn
		due    time.Time
	)
	for c, gc := range l.reading {
		// firstBytes is loaded before inRead, the reverse of the order
		// Read stores them in: a true inRead then means a Read that began
		// after those first bytes came. Loaded the other way round, a
		// goroutine descheduled between the loads could pair the inRead of
		// the first Read, in flight, with the firstBytes it stored on
		// returning, and close a connection whose whole request came.
		fb := gc.firstBytes.Load()
		if !gc.inRead.Load() {
			continue
		}
		from, grace := fb, l.grace
		if from == 0 {
			from, grace = gc.firstRead.Load(), l.silent
		}
		if from == 0 {
			continue
		}
		if at := time.Unix(0, from).Add(grace); victim == nil || at.Before(due) {
			victim, due = c, at
		}
	}
	return victim, due
}

// state follows net/http's ConnState: StateActive is set once a request's
// headers are read, so a connection in StateNew is still reading them.
func (l *activeLimiter) state(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, wasReading := l.reading[c]
	wasBusy := l.busy[c]
	switch s {
	case http.StateNew:
		return
	case http.StateActive:
		delete(l.reading, c)
		l.busy[c] = true
	case http.StateIdle, http.StateHijacked, http.StateClosed:
		delete(l.reading, c)
		delete(l.busy, c)
		delete(l.waiting, c)
	}
	if wasReading || wasBusy {
		l.cond.Broadcast()
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

// counts returns how many connections are reading, busy and waiting, and
// how many readers were closed to make room.
func (l *activeLimiter) counts() (reading, busy, waiting, evicted int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reading), len(l.busy), len(l.waiting), l.evicted
}

// slotKey is the context key of the *slot of a request's connection.
type slotKey struct{}

// slot is a request's connection and the limiter that counts it.
type slot struct {
	l *activeLimiter
	c net.Conn
}

// holdWait moves the connection of the request whose context is ctx from
// busy to waiting, for a long-poll that blocks, and returns the function
// that moves it back. It returns false when the limiter already counts as
// many waiting connections as it allows: the caller answers without
// waiting. Without LimitActive it returns a no-op and true.
func holdWait(ctx context.Context) (release func(), ok bool) {
	s, _ := ctx.Value(slotKey{}).(*slot)
	if s == nil {
		return func() {}, true
	}
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.busy[s.c] {
		return func() {}, true // not counted (HTTP/2 stream, or hijacked)
	}
	if len(l.waiting) >= l.max {
		return nil, false
	}
	delete(l.busy, s.c)
	l.waiting[s.c] = true
	l.cond.Broadcast()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.waiting[s.c] {
			delete(l.waiting, s.c)
			l.busy[s.c] = true
		}
	}, true
}

// plainRefusal is what net/http writes, in one Write on the connection,
// between the status line and the message of a request it refuses before
// any handler runs (431, 400 and the like).
const plainRefusal = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// guardedConn is an accepted connection whose Write turns net/http's
// plain-text refusals into the API's JSON error shape. It keeps the
// methods net/http and the parked long-polls use on a *net.TCPConn
// (CloseWrite, SyscallConn).
type guardedConn struct {
	net.Conn
	maxHeaderBytes int
	firstRead      atomic.Int64 // when Read was first called, Unix ns; 0: never
	firstBytes     atomic.Int64 // when a Read first returned bytes, Unix ns; 0: never
	inRead         atomic.Bool  // the server is in Read, waiting for bytes
}

// Read notes when the server first reads, when bytes first came and
// whether it is blocked in Read, then reads.
//
// inRead is cleared before firstBytes is set: were it the other way
// round, a server goroutine descheduled between the two stores would
// show, for as long as it waits for a CPU, a connection blocked in Read
// after its first bytes, and nextEviction would close it once the grace
// passed, though its whole request had come.
func (c *guardedConn) Read(b []byte) (int, error) {
	if c.firstRead.Load() == 0 {
		c.firstRead.CompareAndSwap(0, time.Now().UnixNano())
	}
	c.inRead.Store(true)
	n, err := c.Conn.Read(b)
	c.inRead.Store(false)
	if n > 0 && c.firstBytes.Load() == 0 {
		c.firstBytes.Store(time.Now().UnixNano())
	}
	return n, err
}

// Write writes b, or the JSON form of b when b is a whole refusal of
// net/http: "HTTP/1.1 <status> <reason>" plainRefusal "<message>". A
// handler's response never has that form: net/http adds a Date header
// after the status line of every response it writes for a handler. It
// reports len(b) written when the JSON form was written whole.
func (c *guardedConn) Write(b []byte) (int, error) {
	if out, ok := c.jsonRefusal(b); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *guardedConn) jsonRefusal(b []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(b, []byte("HTTP/1.1 "))
	if !ok || len(rest) < 4 || rest[3] != ' ' {
		return nil, false
	}
	statusLine, msg, ok := bytes.Cut(rest, []byte(plainRefusal))
	if !ok || bytes.ContainsAny(statusLine, "\r\n") || bytes.ContainsAny(msg, "\r\n") {
		return nil, false
	}
	var status int
	if _, err := fmt.Sscanf(string(statusLine[:3]), "%d", &status); err != nil || status < 400 {
		return nil, false
	}
	text := string(msg)
	if status == http.StatusRequestHeaderFieldsTooLarge {
		text = "request headers larger than " + byteSize(c.maxHeaderBytes)
	}
	w := newParkedResponse()
	writeError(w, status, interaction.InvalidRequest, text)
	out, err := w.serialize(1, false)
	return out, err == nil
}

// byteSize writes n bytes as people read it ("64 KiB"); 0 is net/http's
// default limit.
func byteSize(n int) string {
	if n <= 0 {
		n = http.DefaultMaxHeaderBytes
	}
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// CloseWrite half-closes the connection when it can (net/http sends a FIN
// after a refusal; a parked answer does too).
func (c *guardedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// SyscallConn exposes the connection's descriptor, which connGone reads.
func (c *guardedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, fmt.Errorf("httpapi: %T has no descriptor", c.Conn)
}

// NetConn returns the accepted connection.
func (c *guardedConn) NetConn() net.Conn { return c.Conn }
