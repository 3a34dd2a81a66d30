// Package backoff paces retries: exponential pauses with jitter, so that
// many clients that failed together do not retry together, and runs them
// (Retry: the one retry loop of the module).
package backoff

import (
	"math/rand/v2"
	"time"
)

// Defaults of a zero Backoff.
const (
	DefaultMin    = time.Second
	DefaultMax    = 30 * time.Second
	DefaultJitter = 0.2
)

// Backoff yields the pauses between attempts: Min, doubling up to Max, each
// drawn at random within ±Jitter of its nominal value. The zero value is
// ready to use (1 s doubling to 30 s, ±20 %). A Backoff is not safe for
// concurrent use: each retry loop owns one.
type Backoff struct {
	Min, Max time.Duration // zero: DefaultMin, DefaultMax
	// Jitter is the fraction of each pause drawn at random; zero means
	// DefaultJitter, negative means none (for tests that count pauses).
	Jitter float64

	n int // pauses handed out since the last Reset
}

// Next returns the pause before the next attempt and advances.
func (b *Backoff) Next() time.Duration {
	d := b.Pause(b.n)
	b.n++
	return d
}

// Pause is the pause before attempt n+1 (n = 0: the first pause), from
// b's fields alone: for callers that keep the count of attempts elsewhere
// (in a record that outlives the process) rather than in a Backoff.
func (b Backoff) Pause(n int) time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = DefaultMin
	}
	if hi <= 0 {
		hi = DefaultMax
	}
	hi = max(hi, lo)
	d := lo
	for i := 0; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	j := b.Jitter
	if j == 0 {
		j = DefaultJitter
	}
	if j > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * j * float64(d))
	}
	return d
}

// Attempts returns how many pauses Next handed out since the last Reset.
func (b *Backoff) Attempts() int { return b.n }

// Reset starts the next pause at Min again (after a success).
func (b *Backoff) Reset() { b.n = 0 }
