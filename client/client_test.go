package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slackask/slackask/httpapi"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/asktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newFake returns the shared fake AskService (it outlives the HTTP
// servers in front of it, like a durable store across restarts) with ids
// that must be path-escaped ("ask/1") and asks created on 2024-01-02; a
// Create in channel C_SLACK_FAILS fails as Slack refusing the post.
func newFake() *asktest.Fake {
	f := asktest.New(asktest.Config{IDFormat: "ask/%d", Now: func() time.Time { return time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC) }})
	f.SetHook(func(_ context.Context, c asktest.Call) error {
		if c.Op == asktest.OpCreate && c.In.Channel == "C_SLACK_FAILS" {
			return interaction.Errorf(interaction.SlackError, "channel_not_found")
		}
		return nil
	})
	return f
}

// snapshot returns how many asks f created, how many Withdraws it had and
// the idempotency key of every Create.
func snapshot(f *asktest.Fake) (n, withdrawn int, keys []string) {
	for _, in := range f.Inputs() {
		keys = append(keys, in.IdempotencyKey)
	}
	return f.Len(), f.Calls(asktest.OpWithdraw), keys
}

var input = interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{
	{ID: "q1", Question: "Ship it?", Options: []interaction.Option{{Label: "Yes"}, {Label: "No"}}},
}}}

const token = "test-token"

// newClient returns a Client of ts with short retry timings and its own
// transport, closed at the end of the test.
func newClient(t *testing.T, baseURL string) *Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := New(baseURL, token, &http.Client{Transport: tr})
	c.pollWait, c.minBackoff, c.maxBackoff = 200*time.Millisecond, 5*time.Millisecond, 40*time.Millisecond
	c.createTimeout = time.Second
	return c
}

// newAPI returns the HTTP API over f, closed (its parked long-polls
// answered) when the test ends.
func newAPI(t *testing.T, f *asktest.Fake) *httpapi.Server {
	api := httpapi.New(f, httpapi.Options{Token: token})
	t.Cleanup(func() { _ = api.Close(context.Background()) })
	return api
}

func serve(t *testing.T, f *asktest.Fake) (*httptest.Server, *httpapi.Server) {
	t.Helper()
	api := newAPI(t, f)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	return ts, api
}

func TestMethods(t *testing.T) {
	f := newFake()
	ts, _ := serve(t, f)
	c := newClient(t, ts.URL+"/")
	ctx := context.Background()

	a, err := c.Create(ctx, input, 0)
	if err != nil || a.ID != "ask/1" || a.Status != interaction.StatusPending {
		t.Fatalf("Create = %+v, %v", a, err)
	}
	// The id has a slash: it must be path-escaped.
	if a, err = c.Get(ctx, "ask/1", 0); err != nil || a.ID != "ask/1" {
		t.Fatalf("Get = %+v, %v", a, err)
	}
	start := time.Now()
	if a, err = c.Get(ctx, "ask/1", 30*time.Millisecond); err != nil || a.Status != interaction.StatusPending || time.Since(start) < 30*time.Millisecond {
		t.Fatalf("Get wait = %+v, %v after %v", a, err, time.Since(start))
	}
	go func() { f.End(<-f.Notified, interaction.StatusAnswered, nil, nil) }()
	if a, err = c.Get(ctx, "ask/1", 10*time.Second); err != nil || a.Status != interaction.StatusAnswered {
		t.Fatalf("Get long-poll = %+v, %v", a, err)
	}

	if _, err := c.Create(ctx, input, 0); err != nil {
		t.Fatal(err)
	}
	if a, err = c.Withdraw(ctx, "ask/2"); err != nil || a.Status != interaction.StatusAborted {
		t.Fatalf("Withdraw = %+v, %v", a, err)
	}

	before := time.Date(2024, 5, 6, 7, 8, 9, 5000, time.FixedZone("x", 3600))
	asks, err := c.List(ctx, interaction.ListFilter{Status: interaction.StatusAborted, Limit: 7, Before: before})
	if err != nil || len(asks) != 1 || asks[0].ID != "ask/2" { // ask/1 was answered
		t.Fatalf("List = %+v, %v", asks, err)
	}
	if lf := f.Filter(); lf.Status != interaction.StatusAborted || lf.Limit != 7 || !lf.Before.Equal(before) {
		t.Fatalf("filter = %+v", lf)
	}
}

func TestErrors(t *testing.T) {
	f := newFake()
	ts, _ := serve(t, f)
	c := newClient(t, ts.URL)
	ctx := context.Background()

	_, err := c.Get(ctx, "nope", 0)
	var re *ResponseError
	var ie *interaction.Error
	if !errors.As(err, &re) || re.StatusCode != 404 || re.Op != "get ask" || !errors.As(err, &ie) || ie.Code != interaction.NotFound {
		t.Fatalf("Get unknown: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "get ask: NOT_FOUND: ") {
		t.Fatalf("error text %q", err)
	}

	_, err = c.Create(ctx, interaction.AskInput{}, 0)
	if interaction.ErrorCode(err) != interaction.EmptyQuestions {
		t.Fatalf("Create empty: %v", err)
	}

	bad := New(ts.URL, "wrong", nil)
	if _, err = bad.List(ctx, interaction.ListFilter{}); interaction.ErrorCode(err) != interaction.Unauthorized {
		t.Fatalf("wrong token: %v", err)
	}

	if _, err = New("127.0.0.1:8080", "", nil).Get(ctx, "x", 0); err == nil || !strings.Contains(err.Error(), "base URL") {
		t.Fatalf("bad base URL: %v", err)
	}

	// Not the API's JSON: the status is kept, the code is INTERNAL, and
	// the body is not repeated.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
	}))
	defer proxy.Close()
	_, err = newClient(t, proxy.URL).Get(ctx, "x", 0)
	if !errors.As(err, &re) || re.StatusCode != 502 || re.Err.Code != interaction.Internal || !strings.Contains(re.Err.Message, "HTTP 502") ||
		strings.Contains(err.Error(), "html") || !IsUnreachable(err) || IsForeign(err) {
		t.Fatalf("proxy error: %v", err)
	}
}

// TestForeignServer: a server that is not a slackask API (the dev page's
// port, a plain web server) is named as such, with its status and URL and
// never its body, and is asked once: no retry but for connection errors
// and a slackask 503.
func TestForeignServer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"dev page", 404, "404 page not found"},
		{"plain web server", 501, "<html><body>Unsupported method ('POST')</body></html>"},
		{"html 200", 200, "<html>welcome</html>"},
		{"json of another API", 500, `{"message":"oops"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				hits.Add(1)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			defer ts.Close()
			var retries atomic.Int32
			a, err := newClient(t, ts.URL).AskAndWaitWith(context.Background(), input, WaitOptions{
				OnRetry: func(string, error, time.Duration) { retries.Add(1) },
			})
			want := fmt.Sprintf("this is not a slackask API (HTTP %d from %s/v1/asks)", tc.status, ts.URL)
			if !IsForeign(err) || interaction.ErrorMessage(err) != want || ExitCode(a, err) != 1 {
				t.Fatalf("err = %v, want %q", err, want)
			}
			if strings.Contains(err.Error(), tc.body) || strings.Contains(err.Error(), "oops") {
				t.Fatalf("the foreign body is in the error: %v", err)
			}
			if hits.Load() != 1 || retries.Load() != 0 {
				t.Fatalf("%d requests, %d retries: want 1 and none", hits.Load(), retries.Load())
			}
		})
	}
	// A slackask 500 is not retried either; its 503 is.
	f := newFake()
	api := newAPI(t, f)
	internal := &flaky{h: api, match: func(*http.Request) bool { return true }, fail: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":{"name":"UserInteractionError","code":"INTERNAL","message":"internal error"}}`)
	}}
	internal.n.Store(1)
	ts := httptest.NewServer(internal)
	defer ts.Close()
	if _, err := newClient(t, ts.URL).AskAndWait(context.Background(), input); interaction.ErrorCode(err) != interaction.Internal || IsForeign(err) || internal.hits.Load() != 1 {
		t.Fatalf("slackask 500: %v after %d failures", err, internal.hits.Load())
	}
	busy := &flaky{h: api, match: func(*http.Request) bool { return true }, fail: unavailable}
	busy.n.Store(2)
	ts2 := httptest.NewServer(busy)
	defer ts2.Close()
	go func() { f.End(<-f.Created, interaction.StatusAnswered, nil, nil) }()
	if a, err := newClient(t, ts2.URL).AskAndWait(context.Background(), input); err != nil || a.Status != interaction.StatusAnswered || busy.hits.Load() != 2 {
		t.Fatalf("slackask 503 retried: %+v %v after %d", a, err, busy.hits.Load())
	}
}

func TestAskAndWaitAnswered(t *testing.T) {
	f := newFake()
	ts, _ := serve(t, f)
	c := newClient(t, ts.URL)
	go func() {
		id := <-f.Created
		time.Sleep(300 * time.Millisecond) // more than one poll
		f.End(id, interaction.StatusAnswered, nil, nil)
	}()
	a, err := c.AskAndWait(context.Background(), input)
	if err != nil || a.Status != interaction.StatusAnswered || ExitCode(a, err) != 0 {
		t.Fatalf("AskAndWait = %+v, %v", a, err)
	}
	n, _, keys := snapshot(f)
	if n != 1 || len(keys) != 1 || !strings.HasPrefix(keys[0], "slackask-") || len(keys[0]) < 20 {
		t.Fatalf("asks %d, keys %q", n, keys)
	}
	// A caller's own key is kept.
	in := input
	in.IdempotencyKey = "mine"
	go func() { f.End(<-f.Created, interaction.StatusCancelled, nil, nil) }()
	a, err = c.AskAndWait(context.Background(), in)
	if _, _, keys = snapshot(f); keys[len(keys)-1] != "mine" || a.Status != interaction.StatusCancelled || err != nil || ExitCode(a, err) != 3 {
		t.Fatalf("own key: %+v %v keys %q", a, err, keys)
	}
}

// flaky answers the first n requests matching match with an error before
// passing requests on to h.
type flaky struct {
	h     http.Handler
	n     atomic.Int32
	hits  atomic.Int32
	match func(*http.Request) bool
	fail  func(w http.ResponseWriter, r *http.Request)
}

func (fl *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if fl.match(r) && fl.n.Add(-1) >= 0 {
		fl.hits.Add(1)
		fl.fail(w, r)
		return
	}
	fl.h.ServeHTTP(w, r)
}

func unavailable(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `{"error":{"name":"UserInteractionError","code":"NO_PROVIDER","message":"slack not connected"}}`)
}

// freeAddr returns a loopback address nobody listens on (connection
// refused).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startAt serves h at addr.
func startAt(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	return ts
}

// TestAskAndWaitSurvivesRestart: the server is down when the client starts
// (connection refused), comes up answering 503 a few times, goes down again
// while the client long-polls, and comes back; the client re-attaches by id
// and gets the answer of the one ask it created.
func TestAskAndWaitSurvivesRestart(t *testing.T) {
	f := newFake()
	api := newAPI(t, f)
	addr := freeAddr(t)
	c := newClient(t, "http://"+addr)

	type result struct {
		a   interaction.Ask
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := c.AskAndWait(context.Background(), input)
		done <- result{a, err}
	}()

	time.Sleep(100 * time.Millisecond) // refused for a while
	fl := &flaky{h: api, match: func(*http.Request) bool { return true }, fail: unavailable}
	fl.n.Store(3)
	ts1 := startAt(t, addr, fl)
	id := <-f.Created
	<-f.Notified                 // the client is long-polling
	ts1.CloseClientConnections() // restart: the in-flight poll is dropped
	ts1.Close()                  // then connections are refused
	time.Sleep(100 * time.Millisecond)

	fl2 := &flaky{h: api, match: func(*http.Request) bool { return true }, fail: unavailable}
	fl2.n.Store(2)
	ts2 := startAt(t, addr, fl2)
	defer ts2.Close()
	for deadline := time.Now().Add(5 * time.Second); fl2.hits.Load() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the client did not come back after the restart")
		}
	}
	for len(f.Notified) > 0 { // signals from before the restart
		<-f.Notified
	}
	<-f.Notified // re-attached to the new server
	f.End(id, interaction.StatusAnswered, nil, nil)

	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("AskAndWait did not return")
	}
	if r.err != nil || r.a.ID != id || r.a.Status != interaction.StatusAnswered {
		t.Fatalf("AskAndWait = %+v, %v", r.a, r.err)
	}
	if fl.hits.Load() != 3 || fl2.hits.Load() != 2 {
		t.Fatalf("503s served: %d, %d", fl.hits.Load(), fl2.hits.Load())
	}
	if n, w, _ := snapshot(f); n != 1 || w != 0 {
		t.Fatalf("%d asks created, %d withdrawn", n, w)
	}
}

// TestAskAndWaitRetriedCreateIsIdempotent: the first POST creates the ask
// but its response is lost (a proxy's 502); the retry gets the same ask.
func TestAskAndWaitRetriedCreateIsIdempotent(t *testing.T) {
	f := newFake()
	api := newAPI(t, f)
	fl := &flaky{h: api, match: func(r *http.Request) bool { return r.Method == "POST" },
		fail: func(w http.ResponseWriter, r *http.Request) {
			api.ServeHTTP(httptest.NewRecorder(), r) // created, answer lost
			http.Error(w, "bad gateway", http.StatusBadGateway)
		}}
	fl.n.Store(1)
	ts := httptest.NewServer(fl)
	defer ts.Close()
	go func() { f.End(<-f.Created, interaction.StatusExpired, nil, nil) }()
	a, err := newClient(t, ts.URL).AskAndWait(context.Background(), input)
	if err != nil || a.Status != interaction.StatusExpired || ExitCode(a, err) != 4 {
		t.Fatalf("AskAndWait = %+v, %v", a, err)
	}
	n, _, keys := snapshot(f)
	if n != 1 || len(keys) != 2 || keys[0] != keys[1] || keys[0] == "" {
		t.Fatalf("%d asks, keys %q", n, keys)
	}
}

func TestAskAndWaitNotRetried(t *testing.T) {
	f := newFake()
	ts, _ := serve(t, f)
	c := newClient(t, ts.URL)
	cases := []struct {
		name string
		in   interaction.AskInput
		code interaction.Code
		exit int
	}{
		{"empty", interaction.AskInput{}, interaction.EmptyQuestions, 2},
		{"invalid", interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{{ID: "", Question: "?"}}}}, interaction.InvalidQuestion, 2},
		{"slack error", func() interaction.AskInput { in := input; in.Channel = "C_SLACK_FAILS"; return in }(), interaction.SlackError, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, before := snapshot(f)
			a, err := c.AskAndWait(context.Background(), tc.in)
			if interaction.ErrorCode(err) != tc.code || ExitCode(a, err) != tc.exit {
				t.Fatalf("AskAndWait = %+v, %v (exit %d)", a, err, ExitCode(a, err))
			}
			if _, _, after := snapshot(f); len(after)-len(before) != 1 {
				t.Fatalf("%d creates, want 1 (no retry)", len(after)-len(before))
			}
		})
	}
	// The ask vanished while waiting: NOT_FOUND ends the wait.
	api := newAPI(t, f)
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "GET" {
			r.URL.Path = "/v1/asks/missing"
		}
		api.ServeHTTP(w, r)
	}))
	defer gone.Close()
	a, err := newClient(t, gone.URL).AskAndWait(context.Background(), input)
	if interaction.ErrorCode(err) != interaction.NotFound || a.ID == "" || ExitCode(a, err) != 1 {
		t.Fatalf("vanished: %+v, %v", a, err)
	}
}

// TestAskAndWaitCancel is Ctrl-C: the ask is withdrawn with a fresh context.
func TestAskAndWaitCancel(t *testing.T) {
	t.Run("while waiting", func(t *testing.T) {
		f := newFake()
		ts, _ := serve(t, f)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-f.Notified; cancel() }()
		a, err := newClient(t, ts.URL).AskAndWait(ctx, input)
		if err != nil || a.Status != interaction.StatusAborted || ExitCode(a, err) != 5 {
			t.Fatalf("AskAndWait = %+v, %v", a, err)
		}
		if n, w, _ := snapshot(f); n != 1 || w != 1 {
			t.Fatalf("%d asks, %d withdrawals", n, w)
		}
	})
	t.Run("while creating", func(t *testing.T) {
		// The POST reaches the server, which creates the ask and then hangs;
		// the client learns the id with a second create (same key) and
		// withdraws it.
		f := newFake()
		api := newAPI(t, f)
		fl := &flaky{h: api, match: func(r *http.Request) bool { return r.Method == "POST" },
			fail: func(w http.ResponseWriter, r *http.Request) {
				api.ServeHTTP(httptest.NewRecorder(), r.WithContext(context.Background()))
				<-r.Context().Done()
			}}
		fl.n.Store(1)
		ts := httptest.NewServer(fl)
		defer ts.Close()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-f.Created; cancel() }()
		a, err := newClient(t, ts.URL).AskAndWait(ctx, input)
		if err != nil || a.Status != interaction.StatusAborted || ExitCode(a, err) != 5 {
			t.Fatalf("AskAndWait = %+v, %v", a, err)
		}
		if n, w, _ := snapshot(f); n != 1 || w != 1 {
			t.Fatalf("%d asks, %d withdrawals", n, w)
		}
	})
	t.Run("server down", func(t *testing.T) {
		// Nothing was ever sent: nothing to withdraw.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		a, err := newClient(t, "http://"+freeAddr(t)).AskAndWait(ctx, input)
		if interaction.ErrorCode(err) != interaction.AskAborted || a.ID != "" || ExitCode(a, err) != 5 {
			t.Fatalf("AskAndWait = %+v, %v", a, err)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		f := newFake()
		ts, _ := serve(t, f)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		a, err := newClient(t, ts.URL).AskAndWait(ctx, input)
		if interaction.ErrorCode(err) != interaction.AskAborted || ExitCode(a, err) != 5 {
			t.Fatalf("AskAndWait = %+v, %v", a, err)
		}
		if n, _, _ := snapshot(f); n != 0 {
			t.Fatal("an ask was created")
		}
	})
	t.Run("withdraw fails", func(t *testing.T) {
		f := newFake()
		api := newAPI(t, f)
		fl := &flaky{h: api, match: func(r *http.Request) bool { return r.Method == "DELETE" }, fail: unavailable}
		fl.n.Store(1)
		ts := httptest.NewServer(fl)
		defer ts.Close()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-f.Notified; cancel() }()
		a, err := newClient(t, ts.URL).AskAndWait(ctx, input)
		if interaction.ErrorCode(err) != interaction.AskAborted || a.Status != interaction.StatusPending || ExitCode(a, err) != 5 {
			t.Fatalf("AskAndWait = %+v, %v", a, err)
		}
		if !strings.Contains(err.Error(), a.ID) {
			t.Fatalf("error %q does not name the ask", err)
		}
	})
}

func TestExitCode(t *testing.T) {
	pending := interaction.Ask{Status: interaction.StatusPending}
	cases := []struct {
		name string
		ask  interaction.Ask
		err  error
		want int
	}{
		{"answered", interaction.Ask{Status: interaction.StatusAnswered}, nil, 0},
		{"cancelled", interaction.Ask{Status: interaction.StatusCancelled}, nil, 3},
		{"expired", interaction.Ask{Status: interaction.StatusExpired}, nil, 4},
		{"aborted", interaction.Ask{Status: interaction.StatusAborted}, nil, 5},
		{"status wins over err", interaction.Ask{Status: interaction.StatusAnswered}, errors.New("x"), 0},
		{"pending no error", pending, nil, 1},
		{"empty questions", pending, &ResponseError{Op: "create ask", StatusCode: 400, Err: interaction.Errorf(interaction.EmptyQuestions, "")}, 2},
		{"invalid question", pending, fmt.Errorf("x: %w", interaction.Errorf(interaction.InvalidQuestion, "")), 2},
		{"bad intent", pending, interaction.Errorf(interaction.BadIntent, ""), 2},
		{"cancelled code", pending, interaction.Errorf(interaction.AskCancelled, ""), 3},
		{"timeout code", pending, interaction.Errorf(interaction.AskTimeout, ""), 4},
		{"aborted code", pending, interaction.Errorf(interaction.AskAborted, ""), 5},
		{"context cancelled", pending, fmt.Errorf("x: %w", context.Canceled), 5},
		{"unauthorized", pending, interaction.Errorf(interaction.Unauthorized, ""), 1},
		{"not found", pending, interaction.Errorf(interaction.NotFound, ""), 1},
		{"slack", pending, interaction.Errorf(interaction.SlackError, ""), 1},
		{"transport", interaction.Ask{}, errors.New("connection refused"), 1},
	}
	for _, tc := range cases {
		if got := ExitCode(tc.ask, tc.err); got != tc.want {
			t.Errorf("%s: ExitCode = %d, want %d", tc.name, got, tc.want)
		}
	}
}
