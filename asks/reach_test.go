package asks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
	"github.com/slackask/slackask/webhook"
)

// reachSurface is the test surface with permalinks, and posts whose answer
// can be lost after they landed.
type reachSurface struct {
	*surface
	linkErr error
	lose    atomic.Int32 // posts that land but whose answer is lost
	vanish  atomic.Int32 // posts whose answer is lost and that did not land
	links   atomic.Int32
}

func (f *reachSurface) Post(ctx context.Context, rec Record) (Posted, error) {
	if f.vanish.Load() > 0 {
		f.vanish.Add(-1)
		return Posted{}, ErrOutcomeUnknown
	}
	at, err := f.surface.Post(ctx, rec)
	if err == nil && f.lose.Load() > 0 {
		f.lose.Add(-1)
		f.mu.Lock()
		f.found[rec.ID] = at.TS
		f.mu.Unlock()
		return Posted{}, ErrOutcomeUnknown
	}
	return at, err
}

var _ Permalinker = (*reachSurface)(nil)

func (f *reachSurface) Permalink(_ context.Context, _ Record, at Posted) (string, error) {
	f.links.Add(1)
	if f.linkErr != nil {
		return "", f.linkErr
	}
	return "https://example.slack.com/archives/" + at.Channel + "/p" + strings.ReplaceAll(at.TS, ".", ""), nil
}

func newReachRig(t *testing.T, mod func(*Config)) (*Service, *reachSurface) {
	t.Helper()
	surf := &reachSurface{surface: newSurface()}
	cfg := Config{Store: memory.New(), Surface: surf, DefaultChannel: chanID, Logger: zerolog.Nop()}
	if mod != nil {
		mod(&cfg)
	}
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc, surf
}

func TestIdempotencyKeyWithAnotherRequest(t *testing.T) {
	svc, surf := newReachRig(t, nil)
	ctx := context.Background()
	in := interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "k", Timeout: interaction.Duration(time.Hour)}
	a, created, err := svc.CreateIdempotent(ctx, in)
	if err != nil || !created {
		t.Fatalf("first create: %v %v", created, err)
	}
	// The same request, durations spelt alike: the same ask.
	b, created, err := svc.CreateIdempotent(ctx, in)
	if err != nil || created || b.ID != a.ID {
		t.Fatalf("same request: %+v %v %v", b, created, err)
	}
	other := in
	other.Request = interaction.Request{Questions: []interaction.Question{yesNo("c")}}
	_, _, err = svc.CreateIdempotent(ctx, other)
	if interaction.ErrorCode(err) != interaction.IdempotencyMismatch || !strings.Contains(err.Error(), a.ID) {
		t.Fatalf("another request with the key: %v", err)
	}
	if n := len(surf.posts); n != 1 {
		t.Fatalf("%d messages posted", n)
	}
}

func TestPermalinkStoredOnce(t *testing.T) {
	svc, surf := newReachRig(t, nil)
	ask, err := svc.Create(context.Background(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	want := "https://example.slack.com/archives/" + chanID + "/p" + strings.ReplaceAll(ask.TS, ".", "")
	if ask.Permalink != want {
		t.Fatalf("permalink %q, want %q", ask.Permalink, want)
	}
	if got, _ := svc.Get(context.Background(), ask.ID); got.Permalink != want {
		t.Fatalf("stored permalink %q", got.Permalink)
	}
	// The ts and the link went in one write after the insert (a write
	// fewer per ask: on PostgreSQL two round trips and a commit).
	if rec, err := svc.store.Get(context.Background(), ask.ID); err != nil || rec.Version != 2 || rec.TS != ask.TS {
		t.Fatalf("stored: version %d ts %q, %v; want version 2 (the insert, then one update)", rec.Version, rec.TS, err)
	}
	if n := surf.links.Load(); n != 1 {
		t.Fatalf("%d chat.getPermalink calls", n)
	}
	// A link that cannot be had never fails the ask.
	surf.linkErr = errors.New("slack is down")
	ask, err = svc.Create(context.Background(), interaction.AskInput{Request: twoQuestions()})
	if err != nil || ask.TS == "" || ask.Permalink != "" {
		t.Fatalf("without a link: %+v, %v", ask, err)
	}
}

// An ask left with its message but no link (Slack could not give one, or
// the process died between storing the ts and the link) gets it from a
// retried create with its key, or at recovery; once stored it is not asked
// for again.
func TestMissingPermalinkFilledIn(t *testing.T) {
	ctx := context.Background()
	svc, surf := newReachRig(t, nil)
	surf.linkErr = errors.New("slack is down")
	keyed := interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "k1"}
	first, err := svc.Create(ctx, keyed)
	if err != nil || first.Permalink != "" {
		t.Fatalf("%+v %v", first, err)
	}
	other, err := svc.Create(ctx, interaction.AskInput{Request: twoQuestions()})
	if err != nil || other.Permalink != "" {
		t.Fatalf("%+v %v", other, err)
	}
	surf.linkErr = nil
	again, err := svc.Create(ctx, keyed)
	if err != nil || again.ID != first.ID || again.Permalink == "" {
		t.Fatalf("retried create: %+v %v", again, err)
	}
	if got, _ := svc.Get(ctx, first.ID); got.Permalink != again.Permalink {
		t.Fatalf("stored %q, returned %q", got.Permalink, again.Permalink)
	}
	svc.recover(ctx)
	if got, _ := svc.Get(ctx, other.ID); got.Permalink == "" {
		t.Fatal("recovery left the link missing")
	}
	before := surf.links.Load()
	svc.Create(ctx, keyed)
	svc.recover(ctx)
	if n := surf.links.Load() - before; n != 0 {
		t.Fatalf("%d chat.getPermalink calls for links already stored", n)
	}
}

func TestCallbackURLCheckedAtCreate(t *testing.T) {
	ctx := context.Background()
	in := func(url string) interaction.AskInput {
		return interaction.AskInput{Request: twoQuestions(), CallbackURL: url}
	}
	noSecret, _ := newReachRig(t, nil)
	if _, err := noSecret.Create(ctx, in("https://hooks.example.com/x")); interaction.ErrorCode(err) != interaction.InvalidQuestion ||
		!strings.Contains(err.Error(), "SLACKASK_CALLBACK_SECRET") || !strings.Contains(err.Error(), "callbackUrl") {
		t.Fatalf("a callback without a secret: %v", err)
	}
	strict, surf := newReachRig(t, func(c *Config) { c.Callbacks.Secret = []byte("s3cret") })
	for _, u := range []string{"ftp://hooks.example.com/x", "http://127.0.0.1:9/x", "http://169.254.169.254/latest", "http://localhost/x"} {
		if _, err := strict.Create(ctx, in(u)); interaction.ErrorCode(err) != interaction.InvalidQuestion || !strings.Contains(err.Error(), "callback") {
			t.Fatalf("%s: %v", u, err)
		}
	}
	if n := len(surf.posts); n != 0 {
		t.Fatalf("%d refused asks posted", n)
	}
	ask, err := strict.Create(ctx, in("https://hooks.example.com/x"))
	if err != nil || ask.CallbackURL != "https://hooks.example.com/x" {
		t.Fatalf("a public callback: %+v %v", ask, err)
	}
	private, _ := newReachRig(t, func(c *Config) {
		c.Callbacks.Secret, c.Callbacks.Guard = []byte("s3cret"), webhook.Guard{AllowPrivate: true}
	})
	if _, err := private.Create(ctx, in("http://127.0.0.1:9/x")); err != nil {
		t.Fatalf("loopback with AllowPrivate: %v", err)
	}
}

// receiver is a callback endpoint that checks each signature and answers
// with the statuses queued (200 once they run out).
type receiver struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	statuses []int
	hang     int // requests to leave unanswered until the sender gives up
	got      [][]byte
	bad      int
}

func newReceiver(t *testing.T, secret []byte) *receiver {
	rc := &receiver{t: t}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		if err := webhook.Verify(secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			rc.bad++
		}
		rc.got = append(rc.got, body)
		hang := rc.hang > 0
		if hang {
			rc.hang--
		}
		status := http.StatusOK
		if len(rc.statuses) > 0 {
			status, rc.statuses = rc.statuses[0], rc.statuses[1:]
		}
		rc.mu.Unlock()
		if hang {
			<-r.Context().Done()
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() (n, bad int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got), rc.bad
}

func TestDeliverCallbackRetriesUntilDelivered(t *testing.T) {
	secret := []byte("s3cret")
	rc := newReceiver(t, secret)
	rc.statuses = []int{http.StatusInternalServerError}
	clk := clock.NewFake(time.Now())
	svc, _ := newReachRig(t, func(c *Config) {
		c.Clock = clk
		c.Callbacks = Callbacks{Secret: secret, Guard: webhook.Guard{AllowPrivate: true},
			Deliverer: webhook.NewDeliverer(webhook.Options{Guard: webhook.Guard{AllowPrivate: true}, Timeout: 200 * time.Millisecond})}
	})
	ctx := context.Background()
	ask, err := svc.Create(ctx, interaction.AskInput{Request: twoQuestions(), CallbackURL: rc.srv.URL + "/hook"})
	if err != nil {
		t.Fatal(err)
	}
	pending, _ := svc.store.Get(ctx, ask.ID)
	if pending.Callback != nil {
		t.Fatalf("a pending ask has a delivery: %+v", pending.Callback)
	}
	if _, err := svc.Withdraw(ctx, ask.ID); err != nil {
		t.Fatal(err)
	}
	rec, _ := svc.store.Get(ctx, ask.ID)
	if rec.Callback == nil || rec.WakeAt.IsZero() || rec.WakeAt.After(clk.Now()) {
		t.Fatalf("the end did not arm the delivery: %+v, wake %v", rec.Callback, rec.WakeAt)
	}

	// 500: retried later.
	rec, err = svc.deliverCallback(ctx, rec)
	if err != nil || rec.Callback.Attempts != 1 || rec.Callback.Done() || rec.WakeAt.After(rec.Callback.Next) {
		t.Fatalf("after a 500: %+v wake %v, %v", rec.Callback, rec.WakeAt, err)
	}
	// Not due yet: nothing is sent.
	if rec, _ = svc.deliverCallback(ctx, rec); rec.Callback.Attempts != 1 {
		t.Fatalf("an attempt before its time: %+v", rec.Callback)
	}
	// A timeout: retried later too.
	rc.mu.Lock()
	rc.hang = 1
	rc.mu.Unlock()
	clk.Advance(time.Hour)
	rec, _ = svc.deliverCallback(ctx, rec)
	if rec.Callback.Attempts != 2 || rec.Callback.Done() || rec.Callback.LastError == "" {
		t.Fatalf("after a timeout: %+v", rec.Callback)
	}
	clk.Advance(time.Hour)
	rec, _ = svc.deliverCallback(ctx, rec)
	if rec.Callback.Delivered.IsZero() || rec.Callback.Attempts != 3 {
		t.Fatalf("after a 200: %+v wake %v", rec.Callback, rec.WakeAt)
	}
	// Delivered: never sent again, even when handed the record again.
	clk.Advance(time.Hour)
	svc.deliverCallback(ctx, rec)
	n, bad := rc.requests()
	if n != 3 || bad != 0 {
		t.Fatalf("%d requests, %d badly signed", n, bad)
	}
	rc.mu.Lock()
	body := string(rc.got[2])
	rc.mu.Unlock()
	if !strings.Contains(body, `"id":"`+ask.ID+`"`) || !strings.Contains(body, `"status":"aborted"`) {
		t.Fatalf("body %s", body)
	}
}

// A delivery is given up only when the retry window closes, whatever the
// receiver answers (a 410 is retried like a 503), or at once when this
// side refuses the URL: the guard's refusal cannot change by waiting.
func TestDeliverCallbackGivesUp(t *testing.T) {
	secret := []byte("s3cret")
	rc := newReceiver(t, secret)
	rc.statuses = []int{http.StatusGone, http.StatusServiceUnavailable, http.StatusServiceUnavailable}
	clk := clock.NewFake(time.Now())
	svc, _ := newReachRig(t, func(c *Config) {
		c.Clock = clk
		c.Callbacks = Callbacks{Secret: secret, Guard: webhook.Guard{AllowPrivate: true}, DefaultURL: rc.srv.URL,
			Schedule: webhook.Schedule{First: time.Minute, Max: time.Minute, GiveUpAfter: 90 * time.Second, Jitter: -1}}
	})
	ctx := context.Background()
	// 410, then 503s, until the window closes.
	b := endedAsk(t, svc)
	b, _ = svc.deliverCallback(ctx, b)
	if b.Callback.Done() || b.Callback.Next.IsZero() || !strings.Contains(b.Callback.LastError, "status 410") {
		t.Fatalf("after a 410: %+v", b.Callback)
	}
	clk.Advance(time.Minute)
	b, _ = svc.deliverCallback(ctx, b)
	if b.Callback.Done() {
		t.Fatalf("given up inside the window: %+v", b.Callback)
	}
	clk.Advance(time.Minute)
	if b, _ = svc.deliverCallback(ctx, b); !b.Callback.GaveUp || b.Callback.Attempts != 3 {
		t.Fatalf("after the window: %+v", b.Callback)
	}
	// An address the guard refuses (never allowed, even with
	// AllowPrivate) stops at once, without a request.
	a := endedAsk(t, svc)
	a, err := svc.store.Update(ctx, a.ID, func(r *Record) error {
		c := *r.Callback
		c.URL = "http://0.0.0.0:9/hook"
		r.Callback = &c
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if a, _ = svc.deliverCallback(ctx, a); !a.Callback.GaveUp || a.Callback.Attempts != 1 || !strings.Contains(a.Callback.LastError, "0.0.0.0") {
		t.Fatalf("a refused address: %+v", a.Callback)
	}
	if n, bad := rc.requests(); n != 3 || bad != 0 {
		t.Fatalf("the receiver got %d requests (%d badly signed), want 3", n, bad)
	}
}

func endedAsk(t *testing.T, svc *Service) Record {
	t.Helper()
	ctx := context.Background()
	ask, err := svc.Create(ctx, interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Withdraw(ctx, ask.ID); err != nil {
		t.Fatal(err)
	}
	rec, err := svc.store.Get(ctx, ask.ID)
	if err != nil || rec.Callback == nil {
		t.Fatalf("%+v %v", rec.Callback, err)
	}
	return rec
}

// A post that landed but whose answer was lost keeps its ask: the message
// is found and adopted, a retry with the key posts nothing, and clicks on
// the message work.
func TestUnknownPostOutcomeAdoptsTheMessage(t *testing.T) {
	svc, surf := newReachRig(t, nil)
	surf.lose.Store(1)
	ctx := context.Background()
	in := interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "slow"}
	ask, created, err := svc.CreateIdempotent(ctx, in)
	if err != nil || !created || ask.TS != "" || ask.Status != interaction.StatusPending {
		t.Fatalf("create: %+v %v %v", ask, created, err)
	}
	var rec Record
	// The ts and then the permalink are stored, in two writes.
	waitFor(t, "the message adopted", func() bool {
		rec, _ = svc.store.Get(ctx, ask.ID)
		return rec.TS != "" && rec.Permalink != ""
	})
	again, created, err := svc.CreateIdempotent(ctx, in)
	if err != nil || created || again.ID != ask.ID || again.TS != rec.TS {
		t.Fatalf("retry: %+v %v %v", again, created, err)
	}
	if n := surf.count(&surf.posts, ask.ID); n != 1 {
		t.Fatalf("%d messages posted", n)
	}
	if rec.Permalink == "" {
		t.Fatal("no permalink for the adopted message")
	}
	a := click(rec.Ask, alice)
	a.Rev = rec.Rev
	if _, err := svc.Select(ctx, a, 0, []int{0}); err != nil {
		t.Fatalf("click: %v", err)
	}
	svc.bg.Wait()
}

// A post whose answer was lost and that did not land is posted once.
func TestUnknownPostOutcomePostsOnce(t *testing.T) {
	svc, surf := newReachRig(t, nil)
	surf.vanish.Store(1)
	ctx := context.Background()
	in := interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "lost"}
	ask, err := svc.Create(ctx, in)
	if err != nil || ask.TS != "" {
		t.Fatalf("create: %+v %v", ask, err)
	}
	// Retries while it is being resolved return the same ask.
	for range 3 {
		if again, err := svc.Create(ctx, in); err != nil || again.ID != ask.ID {
			t.Fatalf("retry: %+v %v", again, err)
		}
	}
	waitFor(t, "the message posted", func() bool {
		rec, _ := svc.store.Get(ctx, ask.ID)
		return rec.TS != ""
	})
	svc.bg.Wait()
	if n := surf.count(&surf.posts, ask.ID); n != 1 {
		t.Fatalf("%d messages posted", n)
	}
}

// Only a definite refusal drops the ask; an unknown outcome never does.
func TestRefusedPostStillDrops(t *testing.T) {
	svc, surf := newReachRig(t, nil)
	surf.postErr = interaction.Errorf(interaction.SlackError, "channel_not_found")
	_, err := svc.Create(context.Background(), interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "x"})
	if interaction.ErrorCode(err) != interaction.SlackError {
		t.Fatalf("err = %v", err)
	}
	if asks, _ := svc.List(context.Background(), interaction.ListFilter{}); len(asks) != 0 {
		t.Fatalf("%d asks kept", len(asks))
	}
}

// runService runs svc (its dispatcher included) until the test ends, and
// returns the context it runs on.
func runService(t *testing.T, svc *Service) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = svc.Close() })
	<-svc.recovered
	return ctx
}

// endWithCallback creates an ask with a callback to url and withdraws it,
// which arms the callback's delivery.
func endWithCallback(t *testing.T, ctx context.Context, svc *Service, url string) interaction.Ask {
	t.Helper()
	ask, err := svc.Create(ctx, interaction.AskInput{Request: twoQuestions(), CallbackURL: url})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Withdraw(ctx, ask.ID); err != nil {
		t.Fatal(err)
	}
	return ask
}

// deliverAnother ends one more ask with a callback to url and waits until
// it is delivered: a later event for the deliveries before it.
func deliverAnother(t *testing.T, ctx context.Context, svc *Service, url string) {
	t.Helper()
	other := endWithCallback(t, ctx, svc, url)
	waitFor(t, "the other callback delivered", func() bool {
		r, _ := svc.store.Get(ctx, other.ID)
		return r.Callback != nil && !r.Callback.Delivered.IsZero()
	})
}

// The dispatcher delivers an ended ask's callback, retrying a 500, and
// never again after the 2xx.
func TestDispatcherDeliversCallbacks(t *testing.T) {
	secret := []byte("s3cret")
	rc := newReceiver(t, secret)
	rc.statuses = []int{http.StatusInternalServerError}
	svc, _ := newReachRig(t, func(c *Config) {
		c.Callbacks = Callbacks{Secret: secret, Guard: webhook.Guard{AllowPrivate: true},
			Schedule: webhook.Schedule{First: 50 * time.Millisecond, Max: 50 * time.Millisecond, GiveUpAfter: time.Minute, Jitter: -1}}
	})
	ctx := runService(t, svc)
	ask := endWithCallback(t, ctx, svc, rc.srv.URL)
	var rec Record
	waitFor(t, "the callback delivered", func() bool {
		rec, _ = svc.store.Get(ctx, ask.ID)
		return !rec.Callback.Delivered.IsZero()
	})
	// Another ask's delivery is a later event: by then the first one's
	// would have been sent again if it were.
	deliverAnother(t, ctx, svc, rc.srv.URL)
	if n, bad := rc.requests(); n != 3 || bad != 0 || rec.Callback.Attempts != 2 {
		t.Fatalf("%d requests (%d badly signed), %d attempts", n, bad, rec.Callback.Attempts)
	}
}

// A receiver's 4xx can change by waiting (a 401 while its secret is being
// rotated, a 404 while it deploys): the dispatcher retries it on the
// schedule, as it does a 5xx, and delivers once the receiver answers 2xx,
// never again after it.
func TestDispatcherRetriesReceiver4xx(t *testing.T) {
	secret := []byte("s3cret")
	rc := newReceiver(t, secret)
	rc.statuses = []int{http.StatusUnauthorized, http.StatusNotFound}
	clk := clock.NewFake(time.Now())
	svc, _ := newReachRig(t, func(c *Config) {
		c.Clock = clk
		c.Callbacks = Callbacks{Secret: secret, Guard: webhook.Guard{AllowPrivate: true},
			Schedule: webhook.Schedule{First: time.Minute, Max: time.Minute, GiveUpAfter: 24 * time.Hour, Jitter: -1}}
	})
	ctx := runService(t, svc)
	ask := endWithCallback(t, ctx, svc, rc.srv.URL)
	// attempt waits for the nth attempt's outcome to be stored (or for
	// the delivery to end, which a given-up one does).
	attempt := func(n int) *store.Callback {
		t.Helper()
		var rec Record
		waitFor(t, fmt.Sprintf("attempt %d stored", n), func() bool {
			rec, _ = svc.store.Get(ctx, ask.ID)
			return rec.Callback != nil && (rec.Callback.Attempts >= n || rec.Callback.Done())
		})
		return rec.Callback
	}
	for n, status := range []string{"status 401", "status 404"} {
		cb := attempt(n + 1)
		if cb.Done() || cb.Attempts != n+1 || !strings.Contains(cb.LastError, status) || !cb.Next.Equal(clk.Now().Add(time.Minute)) {
			t.Fatalf("after a %s: %+v, want a retry a minute later", status, cb)
		}
		clk.Advance(time.Minute)
	}
	cb := attempt(3)
	if cb.Delivered.IsZero() || cb.GaveUp || cb.Attempts != 3 || cb.LastError != "" {
		t.Fatalf("after a 200: %+v, want delivered at the third attempt", cb)
	}
	// Another ask's delivery, an hour later, is a later event: by then the
	// first one's would have been sent again if it were.
	clk.Advance(time.Hour)
	deliverAnother(t, ctx, svc, rc.srv.URL)
	rc.mu.Lock()
	var first int
	for _, body := range rc.got {
		if strings.Contains(string(body), `"id":"`+ask.ID+`"`) {
			first++
		}
	}
	bad := rc.bad
	rc.mu.Unlock()
	if first != 3 || bad != 0 {
		t.Fatalf("the first ask was sent %d times (%d requests badly signed), want 3", first, bad)
	}
}

// A retried create that finds the ask without a ts leaves it alone while a
// post of it may still be in flight (in another process), and settles it
// once no post can be.
func TestRetryResolvesOnlyAfterPostsEnded(t *testing.T) {
	clk := clock.NewFake(time.Now())
	svc, surf := newReachRig(t, func(c *Config) { c.Clock = clk })
	ctx := context.Background()
	in := interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "elsewhere"}
	rec := Record{Ask: interaction.Ask{ID: "aelsewhere", Status: interaction.StatusPending, Questions: in.Questions,
		Channel: chanID, CreatedAt: clk.Now()}, IdempotencyKey: in.IdempotencyKey, Fingerprint: in.Fingerprint(), Rev: 1}
	if _, _, err := svc.store.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if a, err := svc.Create(ctx, in); err != nil || a.ID != rec.ID {
		t.Fatalf("retry: %+v %v", a, err)
	}
	svc.bg.Wait()
	if n := surf.count(&surf.posts, rec.ID); n != 0 {
		t.Fatalf("%d posts while another process may be posting", n)
	}
	clk.Advance(time.Minute)
	if _, err := svc.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	svc.bg.Wait()
	if n := surf.count(&surf.posts, rec.ID); n != 1 {
		t.Fatalf("%d posts after the post timeout", n)
	}
}

func TestCallbackErrorsHideTheQuery(t *testing.T) {
	got := redactURL(`webhook: deliver: Post "https://hooks.example.com/x?token=SECRET123": dial tcp: refused`, "https://hooks.example.com/x?token=SECRET123")
	if strings.Contains(got, "SECRET123") || !strings.Contains(got, "https://hooks.example.com/x") {
		t.Fatalf("redacted: %s", got)
	}
}

// A retried create that finds the ask without a ts adopts its message at
// once when the message exists (its creator died between the post and
// storing the ts), however young the ask.
func TestRetryAdoptsAPostedMessageAtOnce(t *testing.T) {
	svc, surf := newReachRig(t, nil)
	ctx := context.Background()
	in := interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "died"}
	rec := Record{Ask: interaction.Ask{ID: "adied", Status: interaction.StatusPending, Questions: in.Questions,
		Channel: chanID, CreatedAt: time.Now()}, IdempotencyKey: in.IdempotencyKey, Fingerprint: in.Fingerprint(), Rev: 1}
	if _, _, err := svc.store.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	surf.mu.Lock()
	surf.found[rec.ID] = "1700000000.000042"
	surf.mu.Unlock()
	if _, err := svc.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	svc.bg.Wait()
	if got, _ := svc.store.Get(ctx, rec.ID); got.TS != "1700000000.000042" || got.Permalink == "" {
		t.Fatalf("not adopted: ts %q permalink %q", got.TS, got.Permalink)
	}
	if n := surf.count(&surf.posts, rec.ID); n != 0 {
		t.Fatalf("%d posts", n)
	}
}

// Replicas whose callback settings lag the one that ended an ask (a deploy
// that sets SLACKASK_CALLBACK_URL or the secret, rolling): the delivery
// goes to the URL fixed when the ask ended, whichever replica attempts it,
// and a replica that cannot sign fails its attempt as retryable instead of
// giving the delivery up, so a replica that can delivers it.
func TestCallbackSettingsOfTheEndingReplica(t *testing.T) {
	secret := []byte("s3cret")
	then, moved := newReceiver(t, secret), newReceiver(t, secret)
	clk := clock.NewFake(time.Now())
	st := memory.New()
	replica := func(cb Callbacks) *Service {
		cb.Guard = webhook.Guard{AllowPrivate: true}
		svc, _ := newReachRig(t, func(c *Config) { c.Clock, c.Store, c.Callbacks = clk, st, cb })
		return svc
	}
	ender := replica(Callbacks{Secret: secret, DefaultURL: then.srv.URL})
	noDefault := replica(Callbacks{Secret: secret})
	movedDefault := replica(Callbacks{Secret: secret, DefaultURL: moved.srv.URL})
	noSecret := replica(Callbacks{})

	a, b := endedAsk(t, ender), endedAsk(t, ender)
	ctx := context.Background()
	a, err := noSecret.deliverCallback(ctx, a)
	if err != nil || a.Callback.Done() || a.Callback.Attempts != 1 || a.Callback.Next.IsZero() ||
		!strings.Contains(a.Callback.LastError, "SLACKASK_CALLBACK_SECRET") {
		t.Fatalf("attempt by a replica without the secret: %+v, %v", a.Callback, err)
	}
	clk.Advance(time.Hour)
	if a, _ = movedDefault.deliverCallback(ctx, a); a.Callback.Delivered.IsZero() {
		t.Fatalf("attempt by a replica whose default moved: %+v", a.Callback)
	}
	if b, _ = noDefault.deliverCallback(ctx, b); b.Callback.Delivered.IsZero() {
		t.Fatalf("attempt by a replica without a default: %+v", b.Callback)
	}
	if n, bad := then.requests(); n != 2 || bad != 0 {
		t.Fatalf("the URL of the end got %d requests (%d badly signed), want 2", n, bad)
	}
	if n, _ := moved.requests(); n != 0 {
		t.Fatalf("the moved default got %d requests", n)
	}
}

// A delivery handed a record from before another attempt delivered it
// (the dispatcher's claim of an older version) returns the record as it
// stands and sends nothing: it used to read the ask by an empty id
// (NOT_FOUND, "duty failed" after every delivery on replicas).
func TestDeliverCallbackWithAStaleRecord(t *testing.T) {
	secret := []byte("s3cret")
	rc := newReceiver(t, secret)
	svc, _ := newReachRig(t, func(c *Config) {
		c.Callbacks = Callbacks{Secret: secret, Guard: webhook.Guard{AllowPrivate: true},
			Deliverer: webhook.NewDeliverer(webhook.Options{Guard: webhook.Guard{AllowPrivate: true}, Timeout: time.Second})}
	})
	ctx := context.Background()
	ask, err := svc.Create(ctx, interaction.AskInput{Request: twoQuestions(), CallbackURL: rc.srv.URL + "/hook"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Withdraw(ctx, ask.ID); err != nil {
		t.Fatal(err)
	}
	stale, _ := svc.store.Get(ctx, ask.ID)
	if rec, err := svc.deliverCallback(ctx, stale); err != nil || rec.Callback.Delivered.IsZero() {
		t.Fatalf("first delivery: %+v, %v", rec.Callback, err)
	}
	rec, err := svc.deliverCallback(ctx, stale)
	if err != nil || rec.ID != ask.ID || rec.Callback.Delivered.IsZero() {
		t.Fatalf("with the stale record: %+v, %v", rec, err)
	}
	if n, _ := rc.requests(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

// adopt of a message when the record already has one (another process
// stored its post first) returns the record as it stands: it used to read
// the ask by an empty id (NOT_FOUND, and a retry of its resolution).
func TestAdoptWhenAlreadyPosted(t *testing.T) {
	svc, _ := newReachRig(t, nil)
	ctx := context.Background()
	ask, err := svc.Create(ctx, interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := svc.store.Get(ctx, ask.ID)
	if rec.TS == "" {
		t.Fatal("the ask was not posted")
	}
	got, err := svc.adopt(ctx, rec, Posted{Channel: rec.Channel, TS: "1.000002", Ref: rec.Channel + "/1.000002"})
	if err != nil || got.ID != ask.ID || got.TS != rec.TS {
		t.Fatalf("adopt over a posted ask: %+v, %v", got, err)
	}
}
