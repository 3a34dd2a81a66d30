package webhook

import (
	"time"

	"github.com/slackask/slackask/internal/backoff"
)

// Schedule paces the attempts of one delivery: First (zero: 1 s) after
// the first failed attempt, doubling up to Max (zero: 30 s; never below
// First), each pause drawn within ±Jitter of its nominal value, until
// GiveUpAfter has passed since the first attempt.
// It is a function of the attempt count (internal/backoff's Pause, not a
// stateful Backoff) because the count lives in the ask's record and
// survives restarts.
type Schedule struct {
	First, Max  time.Duration
	GiveUpAfter time.Duration
	// Jitter is the fraction of each pause drawn at random; negative
	// means none.
	Jitter float64
}

// DefaultSchedule: 10 s doubling to 1 h, ±20 %, for 24 h: 33 attempts
// without jitter, the last at the 24 h mark. A zero Schedule gives up at
// once.
var DefaultSchedule = Schedule{First: 10 * time.Second, Max: time.Hour, GiveUpAfter: 24 * time.Hour, Jitter: 0.2}

// NextRetry is DefaultSchedule.Next.
func NextRetry(attempt int, firstAttempt, now time.Time) (at time.Time, giveUp bool) {
	return DefaultSchedule.Next(attempt, firstAttempt, now)
}

// Next returns when to make the next attempt after attempt failed attempts
// (1 after the first), the first made at firstAttempt. giveUp is true once
// GiveUpAfter has passed since firstAttempt; until then at is never later
// than that deadline, so the last attempt is made at it.
func (s Schedule) Next(attempt int, firstAttempt, now time.Time) (at time.Time, giveUp bool) {
	deadline := firstAttempt.Add(s.GiveUpAfter)
	if !now.Before(deadline) {
		return time.Time{}, true
	}
	jitter := s.Jitter
	if jitter <= 0 {
		jitter = -1 // none; zero is backoff's default
	}
	at = now.Add(backoff.Backoff{Min: s.First, Max: s.Max, Jitter: jitter}.Pause(attempt - 1))
	if at.After(deadline) {
		at = deadline
	}
	return at, false
}

// RetryAt is when to retry after r, the result of attempt number attempt:
// Next, moved later to honour the receiver's Retry-After. giveUp is true
// for a result that is not Retryable, and when the window is over or
// Retry-After asks for a time past it.
func (r Result) RetryAt(s Schedule, attempt int, firstAttempt, now time.Time) (at time.Time, giveUp bool) {
	if r.Outcome != Retryable {
		return time.Time{}, true
	}
	at, giveUp = s.Next(attempt, firstAttempt, now)
	if giveUp || r.RetryAfter <= 0 {
		return at, giveUp
	}
	ra := now.Add(r.RetryAfter)
	if ra.After(firstAttempt.Add(s.GiveUpAfter)) {
		return time.Time{}, true
	}
	return later(at, ra), false
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
