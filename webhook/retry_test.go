package webhook_test

import (
	"testing"
	"time"

	"github.com/slackask/slackask/webhook"
)

func TestScheduleNoJitter(t *testing.T) {
	s := webhook.DefaultSchedule
	s.Jitter = -1
	first := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	now := first.Add(time.Minute)
	want := []time.Duration{10, 20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600, 3600}
	for i, w := range want {
		at, giveUp := s.Next(i+1, first, now)
		if giveUp || at.Sub(now) != w*time.Second {
			t.Errorf("attempt %d: after %s (give up %v), want %ds", i+1, at.Sub(now), giveUp, w)
		}
	}
	if at, _ := s.Next(1000000, first, now); at.Sub(now) != time.Hour {
		t.Errorf("attempt 1e6: after %s, want 1h", at.Sub(now))
	}
	if at, _ := s.Next(0, first, now); at.Sub(now) != 10*time.Second {
		t.Errorf("attempt 0: after %s, want 10s", at.Sub(now))
	}
}

func TestNextRetryJitter(t *testing.T) {
	first := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	seen := map[time.Duration]bool{}
	for range 500 {
		at, giveUp := webhook.NextRetry(3, first, first) // nominal 40 s
		d := at.Sub(first)
		if giveUp || d < 32*time.Second || d > 48*time.Second {
			t.Fatalf("attempt 3: after %s (give up %v), want 40s ±20%%", d, giveUp)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Errorf("500 draws gave %d distinct pauses: no jitter", len(seen))
	}
}

func TestNextRetryGivesUpAfter24h(t *testing.T) {
	first := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	deadline := first.Add(24 * time.Hour)
	for _, now := range []time.Time{deadline, deadline.Add(time.Second), deadline.Add(48 * time.Hour)} {
		if _, giveUp := webhook.NextRetry(30, first, now); !giveUp {
			t.Errorf("at first+%s: not given up", now.Sub(first))
		}
	}
	// The last pause is cut to the deadline: one attempt at it.
	now := deadline.Add(-10 * time.Minute)
	at, giveUp := webhook.NextRetry(30, first, now)
	if giveUp || !at.Equal(deadline) {
		t.Errorf("10 min before the deadline: %v (give up %v), want the deadline %v", at, giveUp, deadline)
	}
	// The whole schedule: attempts until the window closes, never past it.
	s := webhook.DefaultSchedule
	s.Jitter = -1
	n, at := 1, first
	for {
		next, giveUp := s.Next(n, first, at)
		if giveUp {
			break
		}
		if next.After(deadline) || !next.After(at) {
			t.Fatalf("attempt %d at %v: next %v", n, at, next)
		}
		n, at = n+1, next
	}
	if !at.Equal(deadline) || n != 33 {
		t.Errorf("schedule: %d attempts, the last at first+%s; want 33, the last at 24h", n, at.Sub(first))
	}
}

func TestRetryAt(t *testing.T) {
	s := webhook.DefaultSchedule
	s.Jitter = -1
	first := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	now := first.Add(time.Minute)
	for _, c := range []struct {
		name   string
		r      webhook.Result
		after  time.Duration
		giveUp bool
	}{
		{"retryable", webhook.Result{Outcome: webhook.Retryable}, 20 * time.Second, false},
		{"Retry-After shorter than the pause", webhook.Result{Outcome: webhook.Retryable, RetryAfter: 5 * time.Second}, 20 * time.Second, false},
		{"Retry-After longer than the pause", webhook.Result{Outcome: webhook.Retryable, RetryAfter: 2 * time.Hour}, 2 * time.Hour, false},
		{"Retry-After past the window", webhook.Result{Outcome: webhook.Retryable, RetryAfter: 24 * time.Hour}, 0, true},
		{"permanent", webhook.Result{Outcome: webhook.Permanent}, 0, true},
		{"delivered", webhook.Result{Outcome: webhook.Delivered}, 0, true},
	} {
		at, giveUp := c.r.RetryAt(s, 2, first, now)
		if giveUp != c.giveUp || (!giveUp && at.Sub(now) != c.after) {
			t.Errorf("%s: after %s, give up %v; want %s, %v", c.name, at.Sub(now), giveUp, c.after, c.giveUp)
		}
	}
}
