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
	burst := math.Max(3, rate)
	now := s.now()
	b := s.rates[channel]
	if b == nil {
		b = &bucket{tokens: burst, last: now}
		s.rates[channel] = b
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

func rateLimited(wait time.Duration) reply {
	r := errReply("ratelimited")
	r.status, r.retryAfter = http.StatusTooManyRequests, wait
	return r
}
