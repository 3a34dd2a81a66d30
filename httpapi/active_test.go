package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
)

// serveLimited serves api on 127.0.0.1 behind LimitActive(n) and returns
// the base URL and the server.
func serveLimited(t *testing.T, api *Server, n int) (string, *http.Server) {
	t.Helper()
	api.sweepEvery = 10 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(ln.Addr().String(), api)
	lim := LimitActive(ln, srv, n)
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

// Connections that are busy (here: connected, no request yet) hold their
// places; the next connection is not served until one of them goes.
func TestLimitActiveHoldsBackTheRest(t *testing.T) {
	base, _ := serveLimited(t, New(newFake(), Options{}), 2)
	addr := base[len("http://"):]
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	time.Sleep(50 * time.Millisecond) // both accepted
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if r, err := call(ctx, &http.Client{}, "GET", base+"/healthz", ""); err == nil {
		t.Fatalf("served with every place taken: %d", r.status)
	}
	_ = held[0].Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if r, err := call(ctx2, &http.Client{}, "GET", base+"/healthz", ""); err != nil || r.status != 200 {
		t.Fatalf("after a place came free: %+v %v", r, err)
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
