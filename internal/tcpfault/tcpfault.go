// Package tcpfault is a TCP proxy for tests that puts network faults
// between a client and its server (a slackask replica and PostgreSQL):
// every connection reset at once, traffic blackholed (bytes held, so reads
// on both sides hang, then delivered when the hole closes, as after a
// partition that heals within TCP's retransmissions), added latency, or
// connections refused.
package tcpfault

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards each connection accepted on Addr to the target. Its
// methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[*pair]struct{}
	hole    bool          // bytes are held, not forwarded
	latency time.Duration // added to each direction's delivery (half the round trip each)
	refuse  bool          // new connections are reset at once
	changed chan struct{} // closed (and replaced) when hole or latency changes
	closed  bool
	wg      sync.WaitGroup
}

// pair is one proxied connection: the client's and the server's ends.
type pair struct {
	client, server net.Conn
	once           sync.Once
	gone           chan struct{} // closed at reset
}

// New listens on 127.0.0.1 and forwards to target (host:port).
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*pair]struct{}{}, changed: make(chan struct{})}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is where clients connect (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Reset closes every open connection with a TCP reset: each side's next
// read or write fails.
func (p *Proxy) Reset() {
	p.mu.Lock()
	conns := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.reset()
	}
}

// Blackhole holds every byte in both directions while on (new connections
// are accepted, and hang); turned off, what was held is delivered.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hole = on
	p.changedLocked()
}

// Latency delays the delivery of every byte by d in total across a round
// trip (d/2 each way); 0 removes it.
func (p *Proxy) Latency(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latency = d
	p.changedLocked()
}

// Refuse, while on, resets every connection at once: those open now and
// those that come, so that the server cannot be reached at all.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
	if on {
		p.Reset()
	}
}

func (p *Proxy) changedLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Close stops accepting, resets every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.hole = false
	p.changedLocked()
	p.mu.Unlock()
	err := p.ln.Close()
	p.Reset()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse, closed := p.refuse, p.closed
		p.mu.Unlock()
		if refuse || closed {
			resetConn(c)
			continue
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

func (p *Proxy) serve(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		resetConn(client)
		return
	}
	c := &pair{client: client, server: server, gone: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.refuse {
		p.mu.Unlock()
		c.reset()
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	var dirs sync.WaitGroup
	dirs.Go(func() { p.pipe(c, client, server) })
	dirs.Go(func() { p.pipe(c, server, client) })
	dirs.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// chunk is bytes read from one side and when, to be written to the other
// once the latency has passed and no blackhole holds them.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe forwards src to dst: a reader queues what it reads, a writer
// delivers it in order. An end of src is passed on as a half close once
// everything before it was delivered; an error resets the pair.
func (p *Proxy) pipe(c *pair, src, dst net.Conn) {
	q := make(chan chunk, 64)
	var w sync.WaitGroup
	w.Go(func() {
		for ch := range q {
			if !p.deliverable(c, ch.at) {
				c.reset()
				return
			}
			if _, err := dst.Write(ch.b); err != nil {
				c.reset()
				return
			}
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	})
	defer w.Wait()
	defer close(q)
	for {
		buf := make([]byte, 32<<10)
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case q <- chunk{b: buf[:n], at: time.Now()}:
			case <-c.gone:
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.reset()
			}
			return
		}
	}
}

// deliverable waits until a chunk read at `at` may be written: no
// blackhole, and half the latency passed since it was read. False when
// the proxy closed or the pair was reset.
func (p *Proxy) deliverable(c *pair, at time.Time) bool {
	for {
		p.mu.Lock()
		hole, lat, changed, closed := p.hole, p.latency, p.changed, p.closed
		p.mu.Unlock()
		if closed {
			return false
		}
		wait := time.Until(at.Add(lat / 2))
		if !hole && wait <= 0 {
			return true
		}
		if hole {
			wait = time.Hour // until a change
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
		case <-t.C:
		case <-c.gone:
			t.Stop()
			return false
		}
		t.Stop()
	}
}

func (c *pair) reset() {
	c.once.Do(func() {
		close(c.gone)
		resetConn(c.client)
		resetConn(c.server)
	})
}

// resetConn closes c with a TCP reset (linger 0) rather than a FIN.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
