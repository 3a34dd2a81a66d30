package bot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store"
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

// updateProxy stands between one replica and the fake: it holds the first
// chat.update until released and then answers it as Slack's 429 with a
// Retry-After of one second (nothing drawn); every other call passes on.
type updateProxy struct {
	srv      *httptest.Server
	first    atomic.Bool
	entered  chan struct{} // the first chat.update reached the proxy
	release  chan struct{} // answer it (429)
	answered chan struct{} // the 429 was sent
	later    atomic.Int64  // chat.updates passed on (and answered) since
}

func newUpdateProxy(t *testing.T, fake *slackfake.Server) *updateProxy {
	t.Helper()
	target, err := url.Parse(fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	p := &updateProxy{entered: make(chan struct{}), release: make(chan struct{}), answered: make(chan struct{})}
	pass := httputil.NewSingleHostReverseProxy(target)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !strings.HasSuffix(req.URL.Path, "/chat.update") {
			pass.ServeHTTP(w, req)
			return
		}
		if p.first.CompareAndSwap(false, true) {
			close(p.entered)
			<-p.release
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"ok":false,"error":"ratelimited"}`))
			close(p.answered)
			return
		}
		pass.ServeHTTP(w, req)
		p.later.Add(1)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// readSignal is a store that notes each Get of one ask once armed.
type readSignal struct {
	store.Store
	id    string
	armed atomic.Bool
	reads atomic.Int64
}

func (s *readSignal) Get(ctx context.Context, id string) (store.Record, error) {
	if id == s.id && s.armed.Load() {
		s.reads.Add(1)
	}
	return s.Store.Get(ctx, id)
}

// A replica whose chat.update Slack answers with a 429 never sends that
// rendering again once the Retry-After has passed: another replica may
// have ended the ask meanwhile and drawn it ended, and the old rendering
// would draw it live again. Here the end is drawn while replica A's
// update is on its way; A's update is refused; after the pause A reads
// the record again and finds it ended (left unsynced by B, which found A
// listed drawing it: asks/drawers.go) and draws the end. (Before, the adapter
// waited out the 429 itself and sent the live rendering a second after
// the end was drawn, as the PostgreSQL chaos runs saw: seeds
// 1796434468805468200, 1796432839652832371.)
func TestRateLimitedUpdateDoesNotDrawAnEndedAskLive(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ctx := r.ctx()
	ask, err := b.Create(ctx, interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	p := newUpdateProxy(t, r.fake)
	reads := &readSignal{id: ask.ID}
	r.apiURL = p.srv.URL + "/api/"
	r.askStore = func(st store.Store) store.Store { reads.Store = st; return reads }
	a, stopA := r.start()
	r.apiURL, r.askStore = "", nil
	act := func(who string) asks.Act {
		return asks.Act{AskID: ask.ID, By: interaction.User{ID: who}, Workspace: "T0FAKE", App: "A0FAKE",
			Ref: ask.Channel + "/" + ask.TS, Rev: 1}
	}
	if _, err := a.Skip(ctx, act(alice), 0); err != nil { // rev 2, drawn by A
		t.Fatal(err)
	}
	<-p.entered
	if _, err := b.Cancel(ctx, act(bob)); err != nil { // rev 3, drawn ended by B
		t.Fatal(err)
	}
	r.waitFor("B drew the end and checked it", func() bool {
		rec, err := r.store.Get(ctx, ask.ID)
		// B's check drops B from the drawers; A stays listed.
		return err == nil && rec.Status == interaction.StatusCancelled && !rec.Synced && len(rec.Drawers) == 1
	})
	reads.armed.Store(true)
	close(p.release)
	<-p.answered
	// A waits out the pause (on the rig's clock) and reads the record
	// again, or (before) sent its rendering again by itself.
	deadline := time.Now().Add(10 * time.Second)
	for reads.reads.Load() == 0 && p.later.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("replica A neither read the ask again nor sent another update")
		}
		r.clock.Advance(100 * time.Millisecond)
		time.Sleep(10 * time.Millisecond)
	}
	stopA()
	var shown []int
	for _, c := range r.fake.Calls() {
		if c.Method != "chat.update" || c.Error != "" || c.Params["ts"] != ask.TS {
			continue
		}
		ref, ok := blocks.MessageRef([]byte(c.Params["blocks"]))
		if !ok {
			t.Fatalf("an update without the message's ref: %s", c.Params["blocks"])
		}
		shown = append(shown, ref.Rev)
	}
	for i := 1; i < len(shown); i++ {
		if shown[i] < shown[i-1] {
			t.Fatalf("the message went back to rev %d after rev %d (revisions drawn in order: %v)", shown[i], shown[i-1], shown)
		}
	}
	if len(shown) == 0 || shown[len(shown)-1] != 3 {
		t.Fatalf("revisions drawn %v, want the end (rev 3) last", shown)
	}
}
