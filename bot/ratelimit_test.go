package bot

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
)

// limiter lets one call through per interval and answers the others like
// Slack's 429 with Retry-After.
type limiter struct {
	mu       sync.Mutex
	next     time.Time
	interval time.Duration
	calls    atomic.Int64
	inFlight atomic.Int64
	maxIn    atomic.Int64
}

func (l *limiter) post(context.Context) error {
	l.calls.Add(1)
	n := l.inFlight.Add(1)
	defer l.inFlight.Add(-1)
	for {
		m := l.maxIn.Load()
		if n <= m || l.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(time.Millisecond) // the call takes a moment
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if now.Before(l.next) {
		return &slack.RateLimitedError{RetryAfter: l.next.Sub(now)}
	}
	l.next = now.Add(l.interval)
	return nil
}

func TestCallPostTakesTurnsOnALimitedChannel(t *testing.T) {
	b := &Bot{log: zerolog.Nop()}
	l := &limiter{interval: 100 * time.Millisecond}
	const n = 25 // more than maxRateLimitRetries turns: retrying each on its own, the last ones gave up
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var (
		wg     sync.WaitGroup
		failed atomic.Int64
	)
	start := time.Now()
	for range n {
		wg.Go(func() {
			if err := b.callPost(ctx, "C1", l.post); err != nil {
				failed.Add(1)
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d of %d posts failed", failed.Load(), n)
	}
	// n at once, then at most one 429 per turn (the call is retried after
	// Retry-After); retrying each on its own made about n²/2 calls.
	if calls := l.calls.Load(); calls > 3*n {
		t.Errorf("%d calls for %d posts", calls, n)
	}
	if took := time.Since(start); took > time.Duration(n+5)*l.interval+time.Second {
		t.Errorf("took %v for %d posts at one per %v", took, n, l.interval)
	}
	b.postTurns.mu.Lock()
	left := len(b.postTurns.gates)
	b.postTurns.mu.Unlock()
	if left != 0 {
		t.Errorf("%d gates left after all posts", left)
	}
}

func TestCallPostDoesNotSerialiseAnUnlimitedChannel(t *testing.T) {
	b := &Bot{log: zerolog.Nop()}
	l := &limiter{} // never limits
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := b.callPost(context.Background(), "C1", func(ctx context.Context) error {
				time.Sleep(5 * time.Millisecond)
				return l.post(ctx)
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if l.maxIn.Load() < 2 {
		t.Errorf("posts to a channel that is not rate limited ran one at a time")
	}
}

func TestCallPostGivesUpWithTheContext(t *testing.T) {
	b := &Bot{log: zerolog.Nop()}
	l := &limiter{interval: time.Hour}
	if err := b.callPost(context.Background(), "C1", l.post); err != nil { // takes the only token
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := b.callPost(ctx, "C1", l.post); err == nil {
		t.Fatal("a post waiting out an hour-long Retry-After succeeded")
	}
}
