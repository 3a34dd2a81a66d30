package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
)

// serveLimited serves api on 127.0.0.1 behind LimitActive(n) and returns
// the base URL and the server.
func serveLimited(t *testing.T, api *Server, n int) (string, *http.Server) {
	t.Helper()
	return serveLimitedLn(t, api, n, nil)
}

// serveLimitedLn is serveLimited that hands the limiter to adjust, before
// serving, when adjust is not nil.
func serveLimitedLn(t testing.TB, api *Server, n int, adjust func(*activeLimiter)) (string, *http.Server) {
	t.Helper()
	api.sweepEvery = 10 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ln.Addr().String(), api)
	lim := LimitActive(ln, srv, n)
	if adjust != nil {
		adjust(lim.(*activeLimiter))
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lim) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := api.Shutdown(ctx, srv); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve = %v", err)
		}
	})
	return "http://" + ln.Addr().String(), srv
}

// limiterOf returns the limiter of srv's listener as serveLimited made it.
func limiterOf(t *testing.T, ln net.Listener) *activeLimiter {
	t.Helper()
	l, ok := ln.(*activeLimiter)
	if !ok {
		t.Fatalf("%T is not the limiter", ln)
	}
	return l
}

// blocker is a handler (mounted at /block) that holds each request until
// release is called; entered counts the requests inside it.
type blocker struct {
	entered chan struct{}
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{entered: make(chan struct{}, 100), release: make(chan struct{})}
}

func (b *blocker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.entered <- struct{}{}
	<-b.release
	writeJSON(w, http.StatusOK, healthResponse{Status: "ok"})
}

// Busy connections (a handler runs) hold their places: the next
// connection is not accepted until one of them ends.
func TestLimitActiveHoldsBackTheRest(t *testing.T) {
	api := New(newFake(), Options{})
	b := newBlocker()
	api.Mount("GET /block", b)
	var lim *activeLimiter
	base, _ := serveLimitedLn(t, api, 2, func(l *activeLimiter) { lim = l })
	for range 2 {
		go func() { _, _ = call(context.Background(), &http.Client{}, "GET", base+"/block", "") }()
		<-b.entered
	}
	ch := goCall(context.Background(), "GET", base+"/healthz", "")
	// The probe's connection waits in the kernel: Accept is held, and the
	// probe is answered only after a place came free.
	eventually(t, "Accept held", func() bool {
		lim.mu.Lock()
		defer lim.mu.Unlock()
		return lim.held > 0
	})
	select {
	case r := <-ch:
		t.Fatalf("served with every place taken: %+v", r)
	default:
	}
	close(b.release)
	if r := await(t, ch); r.err != nil || r.status != 200 {
		t.Fatalf("after a place came free: %+v", r)
	}
}

// Connections that dribble their headers, or send nothing, take at most a
// quarter of the places; past that one of them is closed for the next, so
// a probe is answered while they hold on.
func TestLimitActiveSlowHeadersCannotTakeEveryPlace(t *testing.T) {
	for name, dial := range map[string]func(testing.TB, string, int) []net.Conn{
		"slow headers": dialSlowHeaders,
		"silent":       dialSilent,
	} {
		t.Run(name, func(t *testing.T) {
			api := New(newFake(), Options{})
			var lim *activeLimiter
			base, _ := serveLimitedLn(t, api, 8, func(l *activeLimiter) {
				lim = l
				l.grace, l.silent = 10*time.Millisecond, 20*time.Millisecond
			})
			slow := dial(t, base[len("http://"):], 20)
			defer closeAll(slow)
			eventually(t, "readers capped", func() bool {
				reading, _, _, evicted := lim.counts()
				return reading == 2 && evicted >= 18
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if r, err := call(ctx, &http.Client{}, "GET", base+"/healthz", ""); err != nil || r.status != 200 {
				t.Fatalf("healthz: %+v %v", r, err)
			}
		})
	}
}

// dialSilent opens n connections to addr that send nothing.
func dialSilent(t testing.TB, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			closeAll(conns)
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}

// A burst of callers that send their headers at once is served whole, the
// reading places far fewer than the callers: a connection the server has
// not read from yet is never closed to make room.
func TestLimitActiveBurstIsNotEvicted(t *testing.T) {
	f := newFake()
	api := New(notifySvc{f}, Options{})
	createOne(f, api)
	var lim *activeLimiter
	base, _ := serveLimitedLn(t, api, 8, func(l *activeLimiter) { lim = l })
	const callers = 200
	var chs []<-chan replyOrErr
	for range callers {
		chs = append(chs, goCall(context.Background(), "GET", base+"/v1/asks/ask-1?wait=1m", ""))
	}
	eventually(t, "all parked", func() bool { return api.parkedCount() == callers })
	f.end("ask-1", interaction.StatusAnswered)
	for _, ch := range chs {
		if r := await(t, ch); r.err != nil || r.status != 200 {
			t.Fatalf("%+v", r)
		}
	}
	if _, _, _, evicted := lim.counts(); evicted != 0 {
		t.Fatalf("%d callers of the burst were closed for others", evicted)
	}
}

// A long-poll blocked in Wait (no Notifier) leaves the busy count while it
// waits; past as many blocked waits as places, a long-poll answers the ask
// as it stands at once.
func TestLimitActiveWaitersDoNotHoldPlaces(t *testing.T) {
	f := newFake()
	api := New(f, Options{})
	createOne(f, api)
	var lim *activeLimiter
	base, _ := serveLimitedLn(t, api, 2, func(l *activeLimiter) { lim = l })
	var polls []<-chan replyOrErr
	for range 2 {
		polls = append(polls, goCall(context.Background(), "GET", base+"/v1/asks/ask-1?wait=1m", ""))
		<-f.waiting
	}
	eventually(t, "2 waiting", func() bool { _, _, waiting, _ := lim.counts(); return waiting == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if r, err := call(ctx, &http.Client{}, "GET", base+"/healthz", ""); err != nil || r.status != 200 {
		t.Fatalf("healthz with every place waiting: %+v %v", r, err)
	}
	// A third wait finds no waiting place: the ask as it stands, at once.
	r, err := call(ctx, &http.Client{}, "GET", base+"/v1/asks/ask-1?wait=1m", "")
	if err != nil || r.status != 200 || !strings.Contains(string(r.body), `"pending"`) {
		t.Fatalf("third wait: %+v %v", r, err)
	}
	f.end("ask-1", interaction.StatusAnswered)
	for _, ch := range polls {
		if r := await(t, ch); r.err != nil || !strings.Contains(string(r.body), `"answered"`) {
			t.Fatalf("%+v", r)
		}
	}
}

// The load in small: long-polls (GET and HEAD) and slow-header
// connections together outnumber the places; /healthz and /readyz still
// answer.
func TestHealthUnderLoad(t *testing.T) {
	f := newFake()
	api := New(notifySvc{f}, Options{})
	createOne(f, api)
	const places, polls, slowConns = 16, 24, 12
	var lim *activeLimiter
	base, _ := serveLimitedLn(t, api, places, func(l *activeLimiter) { lim = l })
	var chs []<-chan replyOrErr
	for i := range polls {
		method := "GET"
		if i%2 == 1 {
			method = "HEAD"
		}
		chs = append(chs, goCall(context.Background(), method, base+"/v1/asks/ask-1?wait=1m", ""))
	}
	eventually(t, "all parked", func() bool { return api.parkedCount() == polls })
	slow := dialSlowHeaders(t, base[len("http://"):], slowConns)
	defer closeAll(slow)
	eventually(t, "slow ones accepted", func() bool {
		reading, _, _, evicted := lim.counts()
		return reading+evicted == slowConns
	})
	for _, path := range []string{"/healthz", "/readyz"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r, err := call(ctx, &http.Client{}, "GET", base+path, "")
		cancel()
		if err != nil || r.status != 200 {
			t.Fatalf("%s under load: %+v %v", path, r, err)
		}
	}
	f.end("ask-1", interaction.StatusAnswered)
	for _, ch := range chs {
		if r := await(t, ch); r.err != nil || r.status != 200 {
			t.Fatalf("%+v", r)
		}
	}
}

// dialSlowHeaders opens n connections to addr that each send the start of
// a request and then nothing more.
func dialSlowHeaders(t testing.TB, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			closeAll(conns)
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: a")); err != nil {
			closeAll(conns)
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	return conns
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		_ = c.Close()
	}
}

// net/http's own refusals before any handler come in the JSON error shape.
func TestRefusalsAreJSON(t *testing.T) {
	base, srv := serveLimited(t, New(newFake(), Options{}), 8)
	addr := base[len("http://"):]
	for name, c := range map[string]struct {
		req    string
		status int
		msg    string
	}{
		"headers too large": {"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", srv.MaxHeaderBytes+8192) + "\r\n\r\n", 431, "request headers larger than 64 KiB"},
		"no Host":           {"GET /healthz HTTP/1.1\r\n\r\n", 400, "missing required Host header"},
		"bad version":       {"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n", 505, "unsupported protocol version"},
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			go func() { _, _ = io.WriteString(conn, c.req) }()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var e errResp
			if resp.StatusCode != c.status || json.Unmarshal(body, &e) != nil || e.Error.Code != string(interaction.InvalidRequest) ||
				e.Error.Name != "UserInteractionError" || !strings.Contains(e.Error.Message, c.msg) {
				t.Fatalf("%d %s: want %d, a JSON error saying %q", resp.StatusCode, body, c.status, c.msg)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}
}

// Parked long-polls and idle keep-alive connections do not count.
func TestLimitActiveCountsOnlyBusy(t *testing.T) {
	f := newFake()
	api := New(notifySvc{f}, Options{})
	createOne(f, api)
	base, _ := serveLimited(t, api, 2)
	var polls []<-chan replyOrErr
	for range 5 {
		polls = append(polls, goCall(context.Background(), "GET", base+"/v1/asks/ask-1?wait=10s", ""))
	}
	eventually(t, "5 parked", func() bool { return api.parkedCount() == 5 })
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	for range 6 { // keep-alive: the connection goes idle between requests
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r, err := call(ctx, client, "GET", base+"/healthz", "")
		cancel()
		if err != nil || r.status != 200 {
			t.Fatalf("with 5 parked: %+v %v", r, err)
		}
	}
	f.end("ask-1", interaction.StatusAnswered)
	for _, ch := range polls {
		if r := await(t, ch); r.err != nil {
			t.Fatal(r.err)
		}
	}
}

// Callers whose whole request comes a little after their connection (a
// loaded client, as in the benchmark's 10,000 callers) are never closed
// for others: the server read from them before their bytes came, and a
// connection whose bytes it is parsing has not stalled, however long ago
// that first read was.
func TestLimitActiveLateWholeRequestIsNotEvicted(t *testing.T) {
	var lim *activeLimiter
	base, _ := serveLimitedLn(t, New(newFake(), Options{}), DefaultMaxActive, func(l *activeLimiter) {
		lim = l
		l.grace = time.Millisecond // the first reads are long past it when the requests come
		// The silent rule is not this test's subject: on a loaded machine a
		// caller's goroutine can wait past silentGrace to write at all.
		l.silent = time.Hour
	})
	addr := base[len("http://"):]
	const callers = 2000
	errs := make(chan error, callers)
	for i := range callers {
		go func() {
			errs <- func() error {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return fmt.Errorf("dial: %w", err)
				}
				defer c.Close()
				// Each caller writes after a pause, in one go, while
				// others keep the reading places changing hands.
				time.Sleep(time.Duration(i%20) * time.Millisecond)
				if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
					return fmt.Errorf("write: %w", err)
				}
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					return fmt.Errorf("caller %d: %w", i, err)
				}
				resp.Body.Close()
				return nil
			}()
		}()
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if _, _, _, evicted := lim.counts(); evicted != 0 {
		t.Fatalf("%d of %d callers were closed for others", evicted, callers)
	}
}
