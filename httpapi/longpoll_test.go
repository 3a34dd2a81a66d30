package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/syncbuf"
)

// notifySvc adds Notifier to fakeSvc: long-polls over HTTP/1.x park.
type notifySvc struct{ *fakeSvc }

func (s notifySvc) Notify(id string, fn func(interaction.Ask)) (cancel func()) {
	return s.fake.Notify(id, fn)
}

// idemNotifySvc is a Notifier and an IdempotentCreator.
type idemNotifySvc struct{ notifySvc }

func (s idemNotifySvc) CreateIdempotent(ctx context.Context, in interaction.AskInput) (interaction.Ask, bool, error) {
	return s.create(ctx, in)
}

// serveAPI serves api on an httptest server and, at cleanup, closes the
// API (answering parked long-polls) and the server. Parked callers that go
// away are noticed within 10ms.
func serveAPI(t *testing.T, api *Server) *httptest.Server {
	t.Helper()
	return serveAPIOn(t, api, nil)
}

// serveAPIOn is serveAPI on ln (nil: a new loopback listener).
func serveAPIOn(t *testing.T, api *Server, ln net.Listener) *httptest.Server {
	t.Helper()
	api.sweepEvery = 10 * time.Millisecond
	ts := httptest.NewUnstartedServer(api)
	if ln != nil {
		ts.Listener.Close()
		ts.Listener = ln
	}
	ts.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := api.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
		ts.Close()
	})
	return ts
}

// reply is one HTTP response as a caller sees it.
type reply struct {
	status int
	header http.Header
	body   []byte
	close  bool // Connection: close
}

// call sends one request on a connection of its own.
func call(ctx context.Context, client *http.Client, method, url, body string) (reply, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return reply{}, err
	}
	c := *client
	if c.Transport == nil {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		c.Transport = tr
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b, close: resp.Close}, nil
}

// goCall runs call in a goroutine; the reply or error comes on the channel.
func goCall(ctx context.Context, method, url, body string) <-chan replyOrErr {
	ch := make(chan replyOrErr, 1)
	go func() {
		r, err := call(ctx, &http.Client{}, method, url, body)
		ch <- replyOrErr{r, err}
	}()
	return ch
}

type replyOrErr struct {
	reply
	err error
}

// await returns the reply, failing the test after 10s.
func await(t *testing.T, ch <-chan replyOrErr) replyOrErr {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no reply within 10s")
		return replyOrErr{}
	}
}

// eventually fails the test unless cond holds within 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// The bound only decides how long a broken build takes to fail, so it
	// is generous: a slow machine must not fail a working one.
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: not %s", what)
		}
	}
}

// TestParkedAnswersAsBlocking sends the same long-polls to a service
// without Notifier (the handler blocks in Wait) and to one with it (the
// connection is parked): the status, the headers but Date and Connection,
// and the JSON bytes must be the same; the parked answer closes the
// connection.
func TestParkedAnswersAsBlocking(t *testing.T) {
	cases := []struct {
		name         string
		idempotent   bool
		setup        func(f *fakeSvc, h *Server) // before the request
		method, path string
		body         string
		waits        bool                        // the request waits (parks) before act
		act          func(f *fakeSvc, id string) // once it waits
		status       int
	}{
		{name: "GET ended while waiting", setup: createOne, method: "GET", path: "/v1/asks/ask-1?wait=10s",
			waits: true, act: func(f *fakeSvc, id string) { f.end(id, interaction.StatusAnswered) }, status: 200},
		{name: "GET cancelled while waiting", setup: createOne, method: "GET", path: "/v1/asks/ask-1?wait=10s",
			waits: true, act: func(f *fakeSvc, id string) { f.end(id, interaction.StatusCancelled) }, status: 200},
		{name: "GET withdrawn while waiting", setup: createOne, method: "GET", path: "/v1/asks/ask-1?wait=10s",
			waits: true, act: func(f *fakeSvc, id string) { _, _ = f.Withdraw(context.Background(), id) }, status: 200},
		{name: "GET wait elapsed", setup: createOne, method: "GET", path: "/v1/asks/ask-1?wait=100ms", waits: true, status: 200},
		{name: "GET wait in seconds elapsed", setup: createOne, method: "GET", path: "/v1/asks/ask-1?wait=0.1", waits: true, status: 200},
		{name: "GET already ended", method: "GET", path: "/v1/asks/ask-1?wait=10s", status: 200,
			setup: func(f *fakeSvc, h *Server) { createOne(f, h); f.end("ask-1", interaction.StatusExpired) }},
		{name: "GET unknown id", setup: createOne, method: "GET", path: "/v1/asks/nope?wait=10s", status: 404},
		{name: "GET bad wait", setup: createOne, method: "GET", path: "/v1/asks/ask-1?wait=soon", status: 400},
		{name: "GET service fails", method: "GET", path: "/v1/asks/ask-1?wait=10s", status: 503,
			setup: func(f *fakeSvc, _ *Server) { f.createErr = interaction.Errorf(interaction.NoProvider, "no provider") }},
		{name: "GET internal error", method: "GET", path: "/v1/asks/ask-1?wait=10s", status: 500,
			setup: func(f *fakeSvc, _ *Server) { f.createErr = errors.New("db password=hunter2 refused") }},
		{name: "GET Get fails after the wait elapsed", setup: createOne, method: "GET", path: "/v1/asks/ask-1?wait=100ms", status: 500,
			waits: true, act: func(f *fakeSvc, id string) {
				f.mu.Lock()
				f.createErr = errors.New("store gone")
				f.mu.Unlock()
			}},
		{name: "GET ended while the store fails: the ask as it ended", setup: createOne, method: "GET", path: "/v1/asks/ask-1?wait=10s", status: 200,
			waits: true, act: func(f *fakeSvc, id string) {
				f.mu.Lock()
				f.createErr = errors.New("store gone")
				f.mu.Unlock()
				f.end(id, interaction.StatusAnswered)
			}},
		{name: "HEAD ended while waiting", setup: createOne, method: "HEAD", path: "/v1/asks/ask-1?wait=10s",
			waits: true, act: func(f *fakeSvc, id string) { f.end(id, interaction.StatusAnswered) }, status: 200},
		{name: "HEAD wait elapsed", setup: createOne, method: "HEAD", path: "/v1/asks/ask-1?wait=100ms", waits: true, status: 200},
		{name: "HEAD unknown id", setup: createOne, method: "HEAD", path: "/v1/asks/nope?wait=10s", status: 404},
		{name: "POST ended while waiting", method: "POST", path: "/v1/asks?wait=10s", body: askBody,
			waits: true, act: func(f *fakeSvc, id string) { f.end(id, interaction.StatusAnswered) }, status: 201},
		{name: "POST wait elapsed", method: "POST", path: "/v1/asks?wait=100ms", body: askBody, waits: true, status: 201},
		{name: "POST Get fails after the wait elapsed: the created ask", method: "POST", path: "/v1/asks?wait=100ms", body: askBody, status: 201,
			waits: true, act: func(f *fakeSvc, id string) {
				f.mu.Lock()
				f.createErr = errors.New("store gone")
				f.mu.Unlock()
			}},
		{name: "POST existing idempotency key, ended while waiting", idempotent: true, method: "POST", path: "/v1/asks?wait=10s",
			body: `{"questions":[{"id":"q1","question":"?"}],"idempotencyKey":"k"}`,
			setup: func(f *fakeSvc, h *Server) {
				do(h, "POST", "/v1/asks", `{"questions":[{"id":"q1","question":"?"}],"idempotencyKey":"k"}`)
			},
			waits: true, act: func(f *fakeSvc, id string) { f.end(id, interaction.StatusAnswered) }, status: 200},
		{name: "POST bad body", method: "POST", path: "/v1/asks?wait=10s", body: `{"questions":`, status: 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got [2]reply
			for i, parked := range []bool{false, true} {
				f := newFake()
				var svc interaction.AskService = f
				switch {
				case parked && tc.idempotent:
					svc = idemNotifySvc{notifySvc{f}}
				case parked:
					svc = notifySvc{f}
				case tc.idempotent:
					svc = idemSvc{f}
				}
				api := New(svc, Options{})
				if tc.setup != nil {
					tc.setup(f, api)
				}
				ts := serveAPI(t, api)
				ch := goCall(context.Background(), tc.method, ts.URL+tc.path, tc.body)
				if tc.waits {
					id := "ask-1"
					if parked {
						eventually(t, "parked", func() bool { return api.parkedCount() == 1 })
					} else {
						id = <-f.waiting
					}
					if tc.act != nil {
						tc.act(f, id)
					}
				}
				r := await(t, ch)
				if r.err != nil {
					t.Fatalf("parked=%v: %v", parked, r.err)
				}
				if r.close != (parked && tc.waits) {
					t.Errorf("parked=%v: Connection: close = %v", parked, r.close)
				}
				eventually(t, "unparked", func() bool { return api.parkedCount() == 0 })
				if n := f.notifications(); n != 0 {
					t.Errorf("parked=%v: %d Notify callbacks left", parked, n)
				}
				r.header.Del("Date")
				r.header.Del("Connection")
				got[i] = r.reply
			}
			blocking, parked := got[0], got[1]
			if blocking.status != tc.status {
				t.Errorf("blocking status = %d, want %d: %s", blocking.status, tc.status, blocking.body)
			}
			if parked.status != blocking.status || !bytes.Equal(parked.body, blocking.body) {
				t.Errorf("parked answered\n%d %s\nblocking answered\n%d %s", parked.status, parked.body, blocking.status, blocking.body)
			}
			if fmt.Sprint(parked.header) != fmt.Sprint(blocking.header) {
				t.Errorf("parked headers %v\nblocking headers %v", parked.header, blocking.header)
			}
		})
	}
}

func createOne(f *fakeSvc, h *Server) { do(h, "POST", "/v1/asks", askBody) }

// TestParkedCallerGone drops parked callers: the poll is forgotten, Notify
// cancelled, the ask left pending, and the request logged once.
func TestParkedCallerGone(t *testing.T) {
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
	}{
		{"GET", "GET", "/v1/asks/ask-1?wait=1m", "", 200},
		{"POST", "POST", "/v1/asks?wait=1m", askBody, 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			var logs syncBuffer
			api := New(notifySvc{f}, Options{Logger: zerolog.New(&logs)})
			if tc.method == "GET" {
				createOne(f, api)
			}
			ts := serveAPI(t, api)
			ctx, cancel := context.WithCancel(context.Background())
			ch := goCall(ctx, tc.method, ts.URL+tc.path, tc.body)
			eventually(t, "parked", func() bool { return api.parkedCount() == 1 })
			cancel()
			if r := await(t, ch); !errors.Is(r.err, context.Canceled) {
				t.Fatalf("client: %v", r.err)
			}
			eventually(t, "dropped", func() bool { return api.parkedCount() == 0 })
			if n := f.notifications(); n != 0 {
				t.Fatalf("%d Notify callbacks left", n)
			}
			if st := f.status("ask-1"); st != interaction.StatusPending || f.withdrawCount() != 0 {
				t.Fatalf("status %s, %d withdrawals after the caller left", st, f.withdrawCount())
			}
			f.end("ask-1", interaction.StatusAnswered) // nobody to wake
			lines := logLines(t, logs.String(), tc.path[:strings.Index(tc.path, "?")])
			if len(lines) != 1 || lines[0].Status != tc.status || lines[0].Method != tc.method {
				t.Fatalf("request log = %+v", lines)
			}
		})
	}
}

// TestParkedRequestLog logs a parked long-poll once, when answered, with
// the status and the whole duration.
func TestParkedRequestLog(t *testing.T) {
	f := newFake()
	var logs syncBuffer
	api := New(notifySvc{f}, Options{Logger: zerolog.New(&logs)})
	createOne(f, api)
	// ServeHTTP writes its request log line before it returns: once it has
	// returned for the parked request, a line logged then would be there.
	returned := make(chan struct{}, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.ServeHTTP(w, r)
		returned <- struct{}{}
	}))
	t.Cleanup(func() {
		if err := api.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
		ts.Close()
	})
	ch := goCall(context.Background(), "GET", ts.URL+"/v1/asks/ask-1?wait=10s", "")
	<-returned
	returnedAt := time.Now()
	if api.parkedCount() != 1 {
		t.Fatal("the long-poll did not park")
	}
	if lines := logLines(t, logs.String(), "/v1/asks/ask-1"); len(lines) != 0 {
		t.Fatalf("logged while parked: %+v", lines)
	}
	// The logged duration runs to the answer, past ServeHTTP's return.
	for time.Since(returnedAt) < 2*time.Millisecond {
		runtime.Gosched()
	}
	parkedFor := time.Since(returnedAt)
	f.end("ask-1", interaction.StatusAnswered)
	if r := await(t, ch); r.err != nil || r.status != 200 {
		t.Fatalf("%+v", r)
	}
	eventually(t, "logged", func() bool { return len(logLines(t, logs.String(), "/v1/asks/ask-1")) == 1 })
	l := logLines(t, logs.String(), "/v1/asks/ask-1")[0]
	if l.Method != "GET" || l.Status != 200 || l.Duration < float64(parkedFor.Milliseconds()) {
		t.Fatalf("log line = %+v", l)
	}
	if strings.Contains(logs.String(), "wait=") {
		t.Fatalf("log has the query: %s", logs.String())
	}
}

// TestParkedAuth: the bearer check runs before anything parks.
func TestParkedAuth(t *testing.T) {
	f := newFake()
	api := New(notifySvc{f}, Options{Token: "tok"})
	createOne(f, api)
	ts := serveAPI(t, api)
	r, err := call(context.Background(), &http.Client{}, "GET", ts.URL+"/v1/asks/ask-1?wait=10s", "")
	if err != nil || r.status != 401 || api.parkedCount() != 0 || f.notifications() != 0 {
		t.Fatalf("%+v %v, parked %d", r, err, api.parkedCount())
	}
}

// TestParkedManyOnOneAsk parks many callers on one ask; its end answers
// them all with the same bytes.
func TestParkedManyOnOneAsk(t *testing.T) {
	const n = 50
	f := newFake()
	api := New(notifySvc{f}, Options{})
	createOne(f, api)
	ts := serveAPI(t, api)
	chs := make([]<-chan replyOrErr, n)
	for i := range chs {
		chs[i] = goCall(context.Background(), "GET", ts.URL+"/v1/asks/ask-1?wait=10s", "")
	}
	eventually(t, "all parked", func() bool { return api.parkedCount() == n })
	f.end("ask-1", interaction.StatusAnswered)
	want := do(api, "GET", "/v1/asks/ask-1", "").Body.Bytes()
	for i, ch := range chs {
		r := await(t, ch)
		if r.err != nil || r.status != 200 || !bytes.Equal(r.body, want) {
			t.Fatalf("caller %d: %v %d %s, want %s", i, r.err, r.status, r.body, want)
		}
	}
	eventually(t, "unparked", func() bool { return api.parkedCount() == 0 })
	if n := f.notifications(); n != 0 {
		t.Fatalf("%d Notify callbacks left", n)
	}
}

// TestClose: parked callers are answered with their ask as it stands,
// blocked ones return, later long-polls answer at once, and a Close that
// runs out of time closes what it could not answer.
func TestClose(t *testing.T) {
	t.Run("answers parked and blocked callers", func(t *testing.T) {
		f := newFake()
		parking := New(notifySvc{f}, Options{})
		createOne(f, parking)
		tsP := serveAPI(t, parking)
		fb := newFake()
		blocking := New(fb, Options{})
		createOne(fb, blocking)
		tsB := serveAPI(t, blocking)

		get := goCall(context.Background(), "GET", tsP.URL+"/v1/asks/ask-1?wait=1m", "")
		post := goCall(context.Background(), "POST", tsP.URL+"/v1/asks?wait=1m", askBody)
		blocked := goCall(context.Background(), "GET", tsB.URL+"/v1/asks/ask-1?wait=1m", "")
		eventually(t, "parked", func() bool { return parking.parkedCount() == 2 })
		<-fb.waiting

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		for _, api := range []*Server{parking, blocking} {
			if err := api.Close(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			name   string
			ch     <-chan replyOrErr
			status int
			id     string
		}{{"parked GET", get, 200, "ask-1"}, {"parked POST", post, 201, "ask-2"}, {"blocked GET", blocked, 200, "ask-1"}} {
			r := await(t, tc.ch)
			var a interaction.Ask
			if r.err != nil || r.status != tc.status || json.Unmarshal(r.body, &a) != nil || a.ID != tc.id || a.Status != interaction.StatusPending {
				t.Fatalf("%s: %v %d %s", tc.name, r.err, r.status, r.body)
			}
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("answered after %v", el)
		}
		if parking.parkedCount() != 0 || f.notifications() != 0 {
			t.Fatalf("%d parked, %d notifications after Close", parking.parkedCount(), f.notifications())
		}
		// Later long-polls do not wait; other requests are served.
		for _, ts := range []*httptest.Server{tsP, tsB} {
			r, err := call(context.Background(), &http.Client{}, "GET", ts.URL+"/v1/asks/ask-1?wait=1m", "")
			if err != nil || r.status != 200 || !strings.Contains(string(r.body), `"pending"`) {
				t.Fatalf("after Close: %+v %v", r, err)
			}
		}
		if err := parking.Close(ctx); err != nil { // again: harmless
			t.Fatal(err)
		}
	})
	t.Run("out of time closes", func(t *testing.T) {
		f := newFake()
		api := New(notifySvc{f}, Options{})
		createOne(f, api)
		ts := serveAPI(t, api)
		ch := goCall(context.Background(), "GET", ts.URL+"/v1/asks/ask-1?wait=1m", "")
		eventually(t, "parked", func() bool { return api.parkedCount() == 1 })
		release := make(chan struct{})
		f.mu.Lock()
		f.getHook = func(string) { <-release } // the answer cannot be built
		f.mu.Unlock()

		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		closed := make(chan error, 1)
		go func() { closed <- api.Close(ctx) }()
		if r := await(t, ch); r.err == nil {
			t.Fatalf("the caller got %d %s, want a closed connection", r.status, r.body)
		}
		close(release)
		if err := <-closed; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close = %v", err)
		}
		f.mu.Lock()
		f.getHook = nil
		f.mu.Unlock()
	})
}

// TestParkedPanic answers 500 when the service panics while a parked
// answer is built, as ServeHTTP's recover does.
func TestParkedPanic(t *testing.T) {
	f := newFake()
	var logs syncBuffer
	api := New(notifySvc{f}, Options{Logger: zerolog.New(&logs)})
	createOne(f, api)
	ts := serveAPI(t, api)
	ch := goCall(context.Background(), "GET", ts.URL+"/v1/asks/ask-1?wait=200ms", "")
	eventually(t, "parked", func() bool { return api.parkedCount() == 1 })
	f.mu.Lock()
	f.getHook = func(string) { panic("kaboom") } // the Get after the wait elapsed
	f.mu.Unlock()
	r := await(t, ch)
	if r.err != nil || r.status != 500 || !strings.Contains(string(r.body), `"INTERNAL"`) {
		t.Fatalf("%+v", r)
	}
	if !strings.Contains(logs.String(), "kaboom") {
		t.Fatal("panic not logged")
	}
	f.mu.Lock()
	f.getHook = nil
	f.mu.Unlock()
}

// TestNotParked keeps the blocking path where parking cannot work: HTTP/2,
// a writer that cannot be hijacked, HEAD.
func TestNotParked(t *testing.T) {
	t.Run("HTTP/2", func(t *testing.T) {
		f := newFake()
		api := New(notifySvc{f}, Options{})
		createOne(f, api)
		ts := httptest.NewUnstartedServer(api)
		ts.EnableHTTP2 = true
		ts.StartTLS()
		defer ts.Close()
		defer api.Close(context.Background())
		ch := make(chan replyOrErr, 1)
		go func() {
			req, _ := http.NewRequest("GET", ts.URL+"/v1/asks/ask-1?wait=10s", nil)
			resp, err := ts.Client().Do(req)
			if err != nil {
				ch <- replyOrErr{err: err}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.ProtoMajor != 2 {
				err = fmt.Errorf("answered over %s", resp.Proto)
			}
			ch <- replyOrErr{reply{status: resp.StatusCode, body: b}, err}
		}()
		f.end(<-f.waiting, interaction.StatusAnswered) // blocked in Wait
		r := await(t, ch)
		if r.err != nil || r.status != 200 || !strings.Contains(string(r.body), `"answered"`) || api.parkedCount() != 0 {
			t.Fatalf("%+v", r)
		}
		ts.Client().Transport.(*http.Transport).CloseIdleConnections()
	})
	t.Run("not hijackable", func(t *testing.T) {
		f := newFake()
		api := New(notifySvc{f}, Options{})
		createOne(f, api)
		go func() { f.end(<-f.waiting, interaction.StatusAnswered) }()
		rec := do(api, "GET", "/v1/asks/ask-1?wait=10s", "") // an httptest.ResponseRecorder
		if rec.Code != 200 || decodeAsk(t, rec).Status != interaction.StatusAnswered || f.notifications() != 0 {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	})
}

// A parked HEAD answers the headers a GET would, Content-Length included,
// and no body: the bytes after the headers are none before the close.
func TestParkedHEADHasNoBody(t *testing.T) {
	f := newFake()
	api := New(notifySvc{f}, Options{})
	createOne(f, api)
	ts := serveAPI(t, api)
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "HEAD /v1/asks/ask-1?wait=10s HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "parked", func() bool { return api.parkedCount() == 1 })
	f.end("ask-1", interaction.StatusAnswered)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	raw, err := io.ReadAll(c) // the parked answer closes the connection
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := bytes.Cut(raw, []byte("\r\n\r\n"))
	if !ok || len(rest) != 0 {
		t.Fatalf("answer %q: want headers and no body", raw)
	}
	get := do(api, "GET", "/v1/asks/ask-1", "")
	if want := fmt.Sprintf("Content-Length: %d", get.Body.Len()); !bytes.Contains(head, []byte(want)) {
		t.Fatalf("headers %q: want %s, as the GET's body", head, want)
	}
}

// syncBuffer collects log lines from many goroutines.
type syncBuffer = syncbuf.Buffer

type logLine struct {
	Method   string  `json:"method"`
	Path     string  `json:"path"`
	Status   int     `json:"status"`
	Duration float64 `json:"durationMs"`
	Message  string  `json:"message"`
}

// logLines returns the request log lines for path.
func logLines(t *testing.T, logs, path string) []logLine {
	t.Helper()
	var out []logLine
	for line := range strings.Lines(logs) {
		var l logLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if l.Message == "http request" && l.Path == path {
			out = append(out, l)
		}
	}
	return out
}

// TestShutdown stops a real http.Server with parked and blocked long-polls:
// both are answered with the pending ask at once, the listener is closed
// first, and Serve returns.
func TestShutdown(t *testing.T) {
	f := newFake()
	api := New(notifySvc{f}, Options{})
	createOne(f, api)
	srv := NewServer("127.0.0.1:0", api)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A writer that is not ServeHTTP's recorder cannot park: it blocks.
	api.Mount("GET /blocking/{id}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.get(struct{ http.ResponseWriter }{w}, r)
	}))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String() + "/v1/asks/ask-1?wait=1m"
	parked := goCall(context.Background(), "GET", url, "")
	blocked := goCall(context.Background(), "GET", "http://"+ln.Addr().String()+"/blocking/ask-1?wait=1m", "")
	eventually(t, "parked", func() bool { return api.parkedCount() == 1 })
	<-f.waiting

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := api.Shutdown(ctx, srv); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("Shutdown took %v", el)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve = %v", err)
	}
	if r := await(t, parked); r.err != nil || r.status != 200 || !strings.Contains(string(r.body), `"pending"`) {
		t.Fatalf("parked: %+v", r)
	}
	if r := await(t, blocked); r.err != nil || r.status != 200 {
		t.Fatalf("blocked: %+v", r)
	}
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Fatal("the listener still accepts")
	}
}

// garbage is the burst's garbage of TestParkingBurstCollects, a package
// variable so that the compiler cannot keep it off the heap.
var garbage []byte

// TestParkingBurstCollects runs a garbage collection every gcEvery parks,
// returning the free heap to the OS
// (so that a burst of callers reuses the buffers hijacking left behind),
// and none for fewer.
func TestParkingBurstCollects(t *testing.T) {
	f := newFake()
	api := New(notifySvc{f}, Options{})
	api.gcEvery = 4
	createOne(f, api)
	ts := serveAPI(t, api)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var calls []<-chan replyOrErr
	for range 3 {
		calls = append(calls, goCall(context.Background(), "GET", ts.URL+"/v1/asks/ask-1?wait=10s", ""))
	}
	eventually(t, "3 parked", func() bool { return api.parkedCount() == 3 })
	if api.parks.Load() != 3 {
		t.Fatalf("parks = %d, want 3", api.parks.Load())
	}
	// Garbage as a burst leaves it: the collection hands its pages back.
	garbage = make([]byte, 64<<20)
	garbage[len(garbage)-1] = 1
	garbage = nil
	calls = append(calls, goCall(context.Background(), "GET", ts.URL+"/v1/asks/ask-1?wait=10s", ""))
	// The fourth park starts the collection under the lock parkedCount
	// takes, so once it counts 4 a false collecting means that collection
	// has ended. (Waiting on NumForcedGC alone could pass on another
	// forced collection while this one was still freeing.)
	eventually(t, "4 parked", func() bool { return api.parkedCount() == 4 })
	eventually(t, "collected", func() bool { return !api.collecting.Load() })
	var now runtime.MemStats
	runtime.ReadMemStats(&now)
	if now.NumForcedGC <= before.NumForcedGC {
		t.Fatalf("no forced collection: NumForcedGC %d, before %d", now.NumForcedGC, before.NumForcedGC)
	}
	if api.parks.Load() != 0 {
		t.Fatalf("parks = %d after the collection, want 0", api.parks.Load())
	}
	if kept := now.HeapIdle - now.HeapReleased; kept > 16<<20 {
		t.Fatalf("%d MB of free heap still resident after the collection", kept>>20)
	}
	f.end("ask-1", interaction.StatusAnswered)
	for _, ch := range calls {
		if r := await(t, ch); r.err != nil || r.status != 200 {
			t.Fatalf("%+v", r)
		}
	}
}

// smallSendBuffers is a listener whose connections have a 4 KB send
// buffer, so that an answer of a few MB fills the kernel's buffers.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

func mustListen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// An answer the kernel cannot take at once (a caller that does not read,
// an answer larger than the socket buffers) does not hold up the goroutine
// that ends the ask: the callback returns and a goroutine finishes the
// write, which then arrives whole.
func TestParkedSlowReaderDoesNotBlockTheEnd(t *testing.T) {
	f := newFake()
	api := New(notifySvc{f}, Options{Logger: zerolog.Nop()})
	createOne(f, api)
	big := strings.Repeat("x", 4<<20)
	f.fake.Change("ask-1", func(a *interaction.Ask) { a.Questions[0].Detail = big })
	ts := serveAPIOn(t, api, smallSendBuffers{mustListen(t)})
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /v1/asks/ask-1?wait=1m HTTP/1.1\r\nHost: slackask\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "parked", func() bool { return api.parkedCount() == 1 })
	ended := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		f.end("ask-1", interaction.StatusAnswered)
		ended <- time.Since(start)
	}()
	select {
	case d := <-ended:
		t.Logf("the end returned after %v", d)
	case <-time.After(5 * time.Second): // a blocked write would wait for the reader
		t.Fatal("ending the ask waited for a caller that does not read")
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got interaction.Ask
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || got.Status != interaction.StatusAnswered || got.Questions[0].Detail != big {
		t.Fatalf("status %d, ask %s with a detail of %d bytes", resp.StatusCode, got.Status, len(got.Questions[0].Detail))
	}
	eventually(t, "unparked", func() bool { return api.parkedCount() == 0 })
}
