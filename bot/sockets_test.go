package bot

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
)

// A bot keeps Connections sockets, and Slack's round robin spreads the
// clicks over them; every click is acked.
func TestSocketsShareTheClicks(t *testing.T) {
	r := newRig(t)
	r.conns = 3
	b, _ := r.start()
	if err := r.fake.WaitConnected(r.ctx(), 3); err != nil {
		t.Fatal(err)
	}
	r.waitFor("three sockets up", func() bool { return b.bot.Connected() == 3 })
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	p := r.fake.Person(alice)
	for i := range 9 {
		if _, err := p.Select(r.ctx(), chanID, ask.TS, selectFinder(i%2), []string{"yes", "no"}[i%3%2]); err != nil {
			t.Fatal(err)
		}
	}
	r.sentinel(ask, 0)
	for _, s := range r.fake.Sockets() {
		if s.Delivered < 3 || s.Acked != s.Delivered {
			t.Fatalf("sockets %+v: want every one to get and ack a third of the clicks", r.fake.Sockets())
		}
	}
	if n := r.fake.UnackedInteractions(); n != 0 {
		t.Fatalf("%d clicks not acked", n)
	}
}

// With two sockets, Slack refreshing one after the other while a person
// keeps clicking leaves no click unacked, and the bot stays ready.
func TestSocketRefreshLeavesNoGap(t *testing.T) {
	r := newRig(t)
	r.conns = 2
	b, _ := r.start()
	r.waitFor("two sockets up", func() bool { return b.bot.Connected() == 2 })
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(r.ctx())
	var clicks atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		p := r.fake.Person(alice)
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := p.Select(ctx, chanID, ask.TS, selectFinder(0), []string{"yes", "no"}[i%2]); err == nil {
				clicks.Add(1)
			}
		}
	})
	var notReady atomic.Int64
	wg.Go(func() {
		for ctx.Err() == nil {
			if b.bot.Ready(ctx) != nil {
				notReady.Add(1)
			}
			time.Sleep(time.Millisecond)
		}
	})
	for round := range 3 {
		socks := r.fake.Sockets()
		if len(socks) == 0 {
			t.Fatal("no socket")
		}
		r.fake.DisconnectSocket(socks[0].ID, "refresh_requested")
		r.waitFor("the refreshed socket back", func() bool { return r.fake.Connections() == 2 && b.bot.Connected() == 2 })
		n := clicks.Load()
		r.waitFor("clicks go on", func() bool { return clicks.Load() > n+3 })
		_ = round
	}
	cancel()
	wg.Wait()
	// A gap would leave a click with no live connection for 3 s
	// (Delivered false). The fake closes a connection right after its
	// disconnect frame, as Slack may, so a click written to it just before
	// cannot be acked: at most one per refresh.
	failed := r.fake.FailedInteractions()
	for _, f := range failed {
		if !f.Delivered {
			t.Fatalf("a click found no connection for 3 s: %+v", f)
		}
	}
	if len(failed) > 3 {
		t.Fatalf("%d of %d clicks not acked over 3 refreshes: %+v", len(failed), clicks.Load(), failed)
	}
	if notReady.Load() != 0 {
		t.Fatalf("not ready %d times during the refreshes", notReady.Load())
	}
}

// Slack's refresh of a connection that lived past MinLife opens the
// successor first; the old connection is closed only after the
// successor's hello.
func TestSocketRefreshOpensTheSuccessorFirst(t *testing.T) {
	var (
		mu            sync.Mutex
		open, maxOpen int
		opens         atomic.Int64
		oldClosedWith = make(chan int, 1)
	)
	upgrader := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		n := opens.Add(1)
		// Counted open before its hello: the client lets go of the old
		// connection on that hello, which may end the old handler first.
		mu.Lock()
		open++
		maxOpen = max(maxOpen, open)
		mu.Unlock()
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","num_connections":1}`))
		if n == 1 {
			time.Sleep(100 * time.Millisecond)
			_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"disconnect","reason":"refresh_requested"}`))
		}
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				break
			}
		}
		mu.Lock()
		if n == 1 {
			oldClosedWith <- open
		}
		open--
		mu.Unlock()
	}))
	defer srv.Close()
	s := &Socket{Handler: &helloCounter{}, Log: zerolog.Nop(), MinLife: 50 * time.Millisecond,
		Open: func(context.Context) (string, error) { return "ws" + strings.TrimPrefix(srv.URL, "http"), nil }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case n := <-oldClosedWith:
		if n != 2 {
			t.Fatalf("the refreshed connection was closed with %d open, want 2 (its successor up first)", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the refreshed connection was never let go")
	}
	if !s.Connected() || opens.Load() != 2 {
		t.Fatalf("connected %v after %d opens", s.Connected(), opens.Load())
	}
}

// An envelope read before a shutdown is still acked on its connection
// once its act is stored, and the connection then ends with a close
// handshake.
func TestSocketShutdownAcksWhatItRead(t *testing.T) {
	acks := make(chan string, 4)
	closed := make(chan int, 1)
	upgrader := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","num_connections":1}`))
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"envelope_id":"e1","type":"interactive","payload":{"type":"block_actions","actions":[]}}`))
		_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			_, data, err := ws.ReadMessage()
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				closed <- ce.Code
				return
			}
			if err != nil {
				closed <- -1
				return
			}
			acks <- string(data)
		}
	}))
	defer srv.Close()
	h := &lateAcker{release: make(chan struct{})}
	hello := make(chan struct{})
	s := &Socket{Handler: h, Log: zerolog.Nop(), Open: func(context.Context) (string, error) {
		return "ws" + strings.TrimPrefix(srv.URL, "http"), nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	go func() {
		for !s.Connected() {
			time.Sleep(time.Millisecond)
		}
		close(hello)
	}()
	<-hello
	for s.Envelopes() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel() // the deploy stops the process while e1's act is being stored
	h.open()
	select {
	case a := <-acks:
		if !strings.Contains(a, `"envelope_id":"e1"`) {
			t.Fatalf("frame %s, want the ack of e1", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the ack of an envelope read before the shutdown never reached Slack")
	}
	if code := <-closed; code != websocket.CloseNormalClosure {
		t.Fatalf("connection ended with %d, want a close handshake (1000)", code)
	}
	<-done
	h.wg.Wait()
}
