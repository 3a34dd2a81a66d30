package webhook_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackask/slackask/webhook"
)

var (
	testSecret = []byte("test-secret")
	testBody   = []byte(`{"id":"ask1","status":"answered"}`)
)

// newDeliverer returns a Deliverer allowed to reach the tests' servers on
// 127.0.0.1.
func newDeliverer(t *testing.T, o webhook.Options) *webhook.Deliverer {
	t.Helper()
	o.Guard.AllowPrivate = true
	d := webhook.NewDeliverer(o)
	t.Cleanup(d.CloseIdleConnections)
	return d
}

// receiver is a callback receiver that checks what it gets. A request
// whose signature does not hold is counted in bad and answered 401.
type receiver struct {
	t      *testing.T
	status int
	hits   atomic.Int32
	bad    atomic.Int32
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.hits.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		rc.t.Errorf("receiver: read body: %v", err)
	}
	if err := webhook.Verify(testSecret, r.Header, body, time.Now(), 0); err != nil {
		rc.bad.Add(1)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	for k, want := range map[string]string{
		"Content-Type":         "application/json",
		"User-Agent":           "slackask",
		webhook.DeliveryHeader: "ask1",
	} {
		if got := r.Header.Get(k); got != want {
			rc.t.Errorf("receiver: %s = %q, want %q", k, got, want)
		}
	}
	if r.Method != http.MethodPost || string(body) != string(testBody) {
		rc.t.Errorf("receiver: %s with %q, want POST with %q", r.Method, body, testBody)
	}
	w.WriteHeader(rc.status)
}

func TestDeliverSigned(t *testing.T) {
	rc := &receiver{t: t, status: http.StatusNoContent}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	r := newDeliverer(t, webhook.Options{}).Deliver(t.Context(), srv.URL+"/hook", "ask1", testSecret, testBody)
	if r.Outcome != webhook.Delivered || r.Status != http.StatusNoContent || r.Err != nil {
		t.Fatalf("Deliver = %+v, want delivered 204", r)
	}
	if n, bad := rc.hits.Load(), rc.bad.Load(); n != 1 || bad != 0 {
		t.Errorf("receiver got %d requests, %d badly signed, want 1 and 0", n, bad)
	}
}

// TestDeliverWrongSecret: the receiver refuses a body signed with another
// secret, and its 401 is retryable: the receiver may be rotating its secret.
func TestDeliverWrongSecret(t *testing.T) {
	rc := &receiver{t: t, status: http.StatusOK}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	r := newDeliverer(t, webhook.Options{}).Deliver(t.Context(), srv.URL, "ask1", []byte("not-the-secret"), testBody)
	if r.Outcome != webhook.Retryable || r.Status != http.StatusUnauthorized || r.Err == nil {
		t.Fatalf("Deliver = %+v, want retryable 401", r)
	}
	if bad := rc.bad.Load(); bad != 1 {
		t.Errorf("receiver refused %d requests, want 1", bad)
	}
}

func TestDeliverClassifiesStatus(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		status     int
		retryAfter string
		want       webhook.Outcome
		wantAfter  time.Duration
	}{
		{200, "", webhook.Delivered, 0},
		{202, "", webhook.Delivered, 0},
		{500, "", webhook.Retryable, 0},
		{502, "", webhook.Retryable, 0},
		{500, "30", webhook.Retryable, 0}, // Retry-After only counts on 429 and 503
		{503, "120", webhook.Retryable, 120 * time.Second},
		{429, "", webhook.Retryable, 0},
		{429, "7", webhook.Retryable, 7 * time.Second},
		{429, now.Add(90 * time.Second).Format(http.TimeFormat), webhook.Retryable, 90 * time.Second},
		{429, now.Add(-time.Hour).Format(http.TimeFormat), webhook.Retryable, 0},
		{429, "soon", webhook.Retryable, 0},
		{429, "-5", webhook.Retryable, 0},
		{429, "99999999999", webhook.Retryable, 24 * time.Hour},
		{408, "", webhook.Retryable, 0},
		// Every other non-2xx is retryable too: a receiver's answer can
		// change by waiting (a secret rotated, a deploy finished).
		{400, "", webhook.Retryable, 0},
		{401, "", webhook.Retryable, 0},
		{403, "", webhook.Retryable, 0},
		{404, "", webhook.Retryable, 0},
		{404, "30", webhook.Retryable, 0},
		{410, "", webhook.Retryable, 0},
		{413, "", webhook.Retryable, 0},
		{422, "", webhook.Retryable, 0},
		{304, "", webhook.Retryable, 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if c.retryAfter != "" {
				w.Header().Set("Retry-After", c.retryAfter)
			}
			w.WriteHeader(c.status)
			_, _ = io.WriteString(w, strings.Repeat("x", 100<<10)) // more than is drained
		}))
		d := newDeliverer(t, webhook.Options{Now: func() time.Time { return now }})
		r := d.Deliver(t.Context(), srv.URL, "ask1", testSecret, testBody)
		srv.Close()
		if r.Outcome != c.want || r.Status != c.status || r.RetryAfter != c.wantAfter {
			t.Errorf("status %d, Retry-After %q: %v status %d after %s, want %v after %s (%v)",
				c.status, c.retryAfter, r.Outcome, r.Status, r.RetryAfter, c.want, c.wantAfter, r.Err)
		}
		if (r.Err == nil) != (c.want == webhook.Delivered) {
			t.Errorf("status %d: Err = %v", c.status, r.Err)
		}
	}
}

// TestDeliverRetriesUntilDelivered plays the caller: 500, 500, then 200,
// each retry scheduled by RetryAt.
func TestDeliverRetriesUntilDelivered(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) <= 2 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	d := newDeliverer(t, webhook.Options{})
	first := time.Now()
	now := first
	for attempt := 1; ; attempt++ {
		r := d.Deliver(t.Context(), srv.URL, "ask1", testSecret, testBody)
		if r.Outcome == webhook.Delivered {
			if attempt != 3 {
				t.Fatalf("delivered at attempt %d, want 3", attempt)
			}
			break
		}
		if r.Outcome != webhook.Retryable || attempt > 3 {
			t.Fatalf("attempt %d: %+v", attempt, r)
		}
		at, giveUp := r.RetryAt(webhook.DefaultSchedule, attempt, first, now)
		if giveUp || !at.After(now) {
			t.Fatalf("attempt %d: RetryAt = %v, %v", attempt, at, giveUp)
		}
		now = at
	}
}

// TestDeliverTimeout: a receiver that never answers costs one Timeout and
// is retried.
func TestDeliverTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	r := newDeliverer(t, webhook.Options{Timeout: 200 * time.Millisecond}).Deliver(t.Context(), srv.URL, "ask1", testSecret, testBody)
	if r.Outcome != webhook.Retryable || r.Status != 0 || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("Deliver = %+v, want retryable after the deadline", r)
	}
	if !strings.Contains(r.Err.Error(), "no answer within 200ms") {
		t.Errorf("Err = %v, want it to say the receiver did not answer in time", r.Err)
	}
}

func TestDeliverConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := newDeliverer(t, webhook.Options{}).Deliver(t.Context(), "http://"+addr+"/", "ask1", testSecret, testBody)
	if r.Outcome != webhook.Retryable || r.Err == nil {
		t.Fatalf("Deliver = %+v, want retryable", r)
	}
}

// TestDeliverCallerGone: the caller's ctx ending (shutdown) is not the
// receiver's fault: retryable.
func TestDeliverCallerGone(t *testing.T) {
	rc := &receiver{t: t, status: http.StatusOK}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := newDeliverer(t, webhook.Options{}).Deliver(ctx, srv.URL, "ask1", testSecret, testBody)
	if r.Outcome != webhook.Retryable || !errors.Is(r.Err, context.Canceled) {
		t.Fatalf("Deliver = %+v, want retryable, canceled", r)
	}
}

// TestDeliverNoRedirect: a redirect is not followed (its target is not
// asked) and is retried like any other non-2xx, its error naming the
// target so the operator can configure the final URL.
func TestDeliverNoRedirect(t *testing.T) {
	var targetHits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { targetHits.Add(1) }))
	defer target.Close()
	for _, st := range []int{301, 302, 303, 307, 308} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/elsewhere", st)
		}))
		r := newDeliverer(t, webhook.Options{}).Deliver(t.Context(), srv.URL, "ask1", testSecret, testBody)
		srv.Close()
		if r.Outcome != webhook.Retryable || r.Status != st || r.Err == nil || !strings.Contains(r.Err.Error(), "/elsewhere") {
			t.Errorf("redirect %d: %+v, want retryable naming the target", st, r)
		}
	}
	// The sentinel: a direct request is the target's first.
	resp, err := target.Client().Post(target.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := targetHits.Load(); n != 1 {
		t.Errorf("redirect target got %d requests, want only the direct one", n)
	}
}

// TestDeliverGuarded: without AllowPrivate, the test's own server is out
// of reach: refused before any request, permanently, as is a URL that is
// not one: this side's configuration, which waiting cannot change.
func TestDeliverGuarded(t *testing.T) {
	rc := &receiver{t: t, status: http.StatusOK}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	d := webhook.NewDeliverer(webhook.Options{})
	defer d.CloseIdleConnections()
	for _, u := range append([]string{srv.URL, "file:///etc/passwd", "ftp://example.com/", "not a url", "http://[::1/x", "http://%zz/"}, privateURLs...) {
		r := d.Deliver(t.Context(), u, "ask1", testSecret, testBody)
		if r.Outcome != webhook.Permanent || r.Status != 0 {
			t.Errorf("Deliver(%q) = %+v, want permanent without a response", u, r)
		}
	}
	if r := newDeliverer(t, webhook.Options{}).Deliver(t.Context(), srv.URL, "ask1", testSecret, testBody); r.Outcome != webhook.Delivered {
		t.Fatalf("sentinel delivery: %+v", r)
	}
	if n := rc.hits.Load(); n != 1 {
		t.Errorf("receiver got %d requests, want only the sentinel", n)
	}
}

func TestDeliverNoSecret(t *testing.T) {
	rc := &receiver{t: t, status: http.StatusOK}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	r := newDeliverer(t, webhook.Options{}).Deliver(t.Context(), srv.URL, "ask1", nil, testBody)
	if r.Outcome != webhook.Permanent || !errors.Is(r.Err, webhook.ErrNoSecret) {
		t.Fatalf("Deliver = %+v, want permanent ErrNoSecret", r)
	}
	if n := rc.hits.Load(); n != 0 {
		t.Errorf("receiver got %d requests, want none", n)
	}
}

// TestDeliverConcurrent: one Deliverer serves many deliveries at once.
func TestDeliverConcurrent(t *testing.T) {
	rc := &receiver{t: t, status: http.StatusOK}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	d := newDeliverer(t, webhook.Options{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if r := d.Deliver(t.Context(), srv.URL, "ask1", testSecret, testBody); r.Outcome != webhook.Delivered {
				t.Errorf("Deliver = %+v", r)
			}
		})
	}
	wg.Wait()
	if n := rc.hits.Load(); n != 8 {
		t.Errorf("receiver got %d requests, want 8", n)
	}
}
