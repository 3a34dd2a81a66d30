package slackfake

import (
	"math"
	"net/http"
	"time"
)

// Failure is an answer to inject into a Web API method with FailNext.
type Failure struct {
	// Status is the HTTP status (0 means 200). 429 always carries a
	// Retry-After header in whole seconds (rounded up, at least 1).
	Status int
	// RetryAfter is sent as Retry-After on a 429.
	RetryAfter time.Duration
	// Error is the Slack error code in the body; empty means "ratelimited"
	// on a 429, "internal_error" on other statuses and "fatal_error" on 200.
	Error string
}

type injected struct {
	f    Failure
	left int
}

// FailNext makes the next n calls of method fail with f (before the token
// is checked), after any failures already queued for it. n <= 0 does nothing.
func (s *Server) FailNext(method string, n int, f Failure) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails[method] = append(s.fails[method], &injected{f: f, left: n})
}

// DelayNext makes the next n calls of method that get this far be applied
// as usual and answered only after d (or never, when the client gives up
// first): Slack accepted the call, the client cannot know it. n <= 0 does
// nothing.
func (s *Server) DelayNext(method string, n int, d time.Duration) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.delays[method] = append(s.delays[method], d)
	}
}

// takeDelayLocked returns the delay queued for the next answer of method.
func (s *Server) takeDelayLocked(method string) time.Duration {
	q := s.delays[method]
	if len(q) == 0 {
		return 0
	}
	s.delays[method] = q[1:]
	return q[0]
}

func (s *Server) takeFailureLocked(method string) *Failure {
	q := s.fails[method]
	if len(q) == 0 {
		return nil
	}
	f := q[0].f
	if q[0].left--; q[0].left == 0 {
		s.fails[method] = q[1:]
	}
	return &f
}

func (f Failure) reply() reply {
	status := f.Status
	if status == 0 {
		status = http.StatusOK
	}
	code := f.Error
	if code == "" {
		switch status {
		case http.StatusTooManyRequests:
			code = "ratelimited"
		case http.StatusOK:
			code = "fatal_error"
		default:
			code = "internal_error"
		}
	}
	r := errReply(code)
	r.status, r.retryAfter = status, f.RetryAfter
	return r
}

// bucket is a token bucket refilled by Config.Now.
type bucket struct {
	tokens float64
	last   time.Time
}

// allowPostLocked spends a chat.postMessage token of channel; when none is
// left it returns the wait until the next one.
func (s *Server) allowPostLocked(channel string) (ok bool, wait time.Duration) {
	rate := s.cfg.PostsPerSecondPerChannel
	if rate <= 0 {
		return true, 0
	}
	b := s.rates[channel]
	if b == nil {
		b = &bucket{}
		s.rates[channel] = b
	}
	return b.take(s.now(), rate, math.Max(3, rate))
}

// take spends a token of a bucket refilled with rate tokens a second up to
// burst (a new bucket starts full); when none is left it returns the wait
// until the next one.
func (b *bucket) take(now time.Time, rate, burst float64) (ok bool, wait time.Duration) {
	if b.last.IsZero() {
		b.tokens, b.last = burst, now
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(burst, b.tokens+el*rate)
	}
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// tierBurst is how many calls of a method limited by its tier
// (tierLocked) may follow each other before the per-minute rate applies.
const tierBurst = 20

// tierLocked spends a call of a method Slack limits by its tier (per
// method, per workspace, per app: key names the method and workspace)
// from a bucket of perMinute calls a minute, burst tierBurst. When none is
// left it returns the 429 to answer and false; perMinute <= 0 is
// unlimited.
func (s *Server) tierLocked(key string, perMinute float64) (reply, bool) {
	if perMinute <= 0 {
		return reply{}, true
	}
	b := s.rates[key]
	if b == nil {
		b = &bucket{}
		s.rates[key] = b
	}
	if ok, wait := b.take(s.now(), perMinute/60, tierBurst); !ok {
		return rateLimited(wait), false
	}
	return reply{}, true
}

func rateLimited(wait time.Duration) reply {
	r := errReply("ratelimited")
	r.status, r.retryAfter = http.StatusTooManyRequests, wait
	return r
}

// SocketAction is what a SocketFault does to a new Socket Mode connection.
type SocketAction int

// Socket faults, for testing how a client copes with connections that end
// young.
const (
	// SocketDisconnect sends hello, then {"type":"disconnect","reason":…}
	// and closes the connection.
	SocketDisconnect SocketAction = iota + 1
	// SocketCut sends hello, then closes the TCP connection without a close
	// frame, as a network failure does.
	SocketCut
	// SocketCutBeforeHello closes the TCP connection right after the
	// WebSocket upgrade, before hello.
	SocketCutBeforeHello
	// SocketHoldHello sends nothing (no hello, no ping) for After, then
	// proceeds as a normal connection; After 0 holds it until the server
	// closes. The connection is not live while held.
	SocketHoldHello
)

// SocketFault is injected into new Socket Mode connections with
// FailNextSockets.
type SocketFault struct {
	Action SocketAction
	// After is how long after hello the connection stays live (envelopes
	// may reach it) before SocketDisconnect or SocketCut acts; 0 acts right
	// after hello, before any envelope. For SocketHoldHello: the hold.
	After time.Duration
	// Reason is the disconnect frame's reason (default "refresh_requested").
	Reason string
}

func (f SocketFault) reason() string {
	if f.Reason == "" {
		return "refresh_requested"
	}
	return f.Reason
}

type socketFaultQ struct {
	f    SocketFault
	left int
}

// FailNextSockets applies f to the connections made with the next n URLs
// that apps.connections.open hands out (after any faults already queued),
// so that the order of faults is the order of the calls. n <= 0 does
// nothing. A connection refused as an 11th is refused all the same.
func (s *Server) FailNextSockets(n int, f SocketFault) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sock.faults = append(s.sock.faults, &socketFaultQ{f: f, left: n})
}

// takeSocketFaultLocked returns the next queued fault, or the zero
// SocketFault.
func (s *Server) takeSocketFaultLocked() SocketFault {
	if len(s.sock.faults) == 0 {
		return SocketFault{}
	}
	q := s.sock.faults[0]
	if q.left--; q.left == 0 {
		s.sock.faults = s.sock.faults[1:]
	}
	return q.f
}
