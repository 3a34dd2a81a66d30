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
	c := conn{ws: &space{}}
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
			if err := b.callPost(ctx, c, "C1", l.post); err != nil {
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
	c.ws.posts.mu.Lock()
	left := len(c.ws.posts.gates)
	c.ws.posts.mu.Unlock()
	if left != 0 {
		t.Errorf("%d gates left after all posts", left)
	}
}

func TestCallPostDoesNotSerialiseAnUnlimitedChannel(t *testing.T) {
	b := &Bot{log: zerolog.Nop()}
	c := conn{ws: &space{}}
	l := &limiter{} // never limits
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := b.callPost(context.Background(), c, "C1", func(ctx context.Context) error {
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
	c := conn{ws: &space{}}
	l := &limiter{interval: time.Hour}
	if err := b.callPost(context.Background(), c, "C1", l.post); err != nil { // takes the only token
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := b.callPost(ctx, c, "C1", l.post); err == nil {
		t.Fatal("a post waiting out an hour-long Retry-After succeeded")
	}
}

// Slack limits each workspace apart: a channel rate-limited in one
// workspace (its posts waiting out an hour-long Retry-After) does not hold
// a post to a conversation of the same id in another, which calls Slack
// at once.
func TestCallPostTurnsArePerWorkspace(t *testing.T) {
	b := &Bot{log: zerolog.Nop()}
	routes := &route{source: newTestInstalls()}
	busy, calm := conn{ws: routes.space("T0BUSY")}, conn{ws: routes.space("T0CALM")}
	l := &limiter{interval: time.Hour}
	if err := b.callPost(context.Background(), busy, "C1", l.post); err != nil { // takes the only token
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { waiting <- b.callPost(ctx, busy, "C1", l.post) }() // 429: holds C1's turn in T0BUSY
	for time.Until(busy.ws.posts.limitedUntil("C1")) <= 0 {
		time.Sleep(time.Millisecond) // until the 429 came back: an event, not a deadline
	}
	calm1 := &limiter{interval: time.Hour}
	if err := b.callPost(context.Background(), calm, "C1", calm1.post); err != nil || calm1.calls.Load() != 1 {
		t.Fatalf("post in the calm workspace: %v after %d calls", err, calm1.calls.Load())
	}
	if until := calm.ws.posts.limitedUntil("C1"); !until.IsZero() {
		t.Errorf("the calm workspace's C1 is limited until %v", until)
	}
	cancel()
	if err := <-waiting; err == nil {
		t.Error("the busy workspace's post waiting out an hour succeeded")
	}
}
