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
)

// socketServer is a tiny Socket Mode endpoint: each connection gets a
// hello, is held for hold, then ends as end says ("disconnect": Slack's
// refresh_requested; "cut": the TCP connection closed without a word).
type socketServer struct {
	*httptest.Server
	opens atomic.Int64
}

func newSocketServer(t *testing.T, hold time.Duration, end string) *socketServer {
	t.Helper()
	s := &socketServer{}
	upgrader := websocket.Upgrader{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","num_connections":1,"connection_info":{"app_id":"A0TEST"}}`))
		time.Sleep(hold)
		if end == "disconnect" {
			_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"disconnect","reason":"refresh_requested"}`))
			// Slack closes the connection after a disconnect.
			_, _, _ = ws.ReadMessage()
		}
		_ = ws.UnderlyingConn().Close()
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *socketServer) open(context.Context) (string, error) {
	s.opens.Add(1)
	return "ws" + strings.TrimPrefix(s.URL, "http"), nil
}

// helloCounter is an EnvelopeHandler that counts hellos.
type helloCounter struct{ hellos atomic.Int64 }

func (h *helloCounter) Hello(string)                               { h.hellos.Add(1) }
func (h *helloCounter) Interactive(_ context.Context, e *Envelope) { e.Ack(nil) }

// runSocketFor runs a Socket against srv for d and returns how many
// connections it opened.
func runSocketFor(t *testing.T, srv *socketServer, minLife, d time.Duration) (opens, hellos int64) {
	t.Helper()
	h := &helloCounter{}
	s := &Socket{Open: srv.open, Handler: h, Log: zerolog.Nop(), MinLife: minLife}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := s.Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v", err)
	}
	return srv.opens.Load(), h.hellos.Load()
}

// A connection that ends right after its hello — by Slack's disconnect or
// a cut — counts as a failed connect and is backed off (1 s ± 20 % first),
// not redialled at once in a loop.
func TestSocketEndingYoungBacksOff(t *testing.T) {
	for _, end := range []string{"disconnect", "cut"} {
		t.Run(end, func(t *testing.T) {
			srv := newSocketServer(t, 0, end)
			opens, hellos := runSocketFor(t, srv, 0, 1500*time.Millisecond)
			if hellos == 0 {
				t.Fatal("no hello reached the handler")
			}
			if opens < 2 || opens > 3 {
				t.Fatalf("apps.connections.open called %d times in 1.5 s, want 2 (at once, then after the 1 s backoff)", opens)
			}
		})
	}
}

// Slack's periodic refresh, of a connection that lived past MinLife,
// reconnects at once.
func TestSocketRefreshAfterALongLifeReconnectsAtOnce(t *testing.T) {
	srv := newSocketServer(t, 150*time.Millisecond, "disconnect")
	opens, _ := runSocketFor(t, srv, 50*time.Millisecond, 1500*time.Millisecond)
	if opens < 4 {
		t.Fatalf("apps.connections.open called %d times in 1.5 s of 150 ms connections, want a reconnect after each (no backoff)", opens)
	}
}

// lateAcker is an EnvelopeHandler that acks each interactive envelope
// only once release is closed, as a person act does after its store write.
type lateAcker struct {
	release chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

func (h *lateAcker) open() { h.once.Do(func() { close(h.release) }) }

func (h *lateAcker) Hello(string) {}
func (h *lateAcker) Interactive(_ context.Context, e *Envelope) {
	h.wg.Go(func() {
		<-h.release
		e.Ack(nil)
	})
}

// A connection that Slack ends stays open for the acks of the envelopes
// read from it before: an act stored after the disconnect is still acked,
// on the connection its envelope came on.
func TestSocketKeepsAnEndedConnectionForItsAcks(t *testing.T) {
	acks := make(chan string, 4)
	upgrader := websocket.Upgrader{}
	var opens atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer ws.Close()
		if opens.Add(1) > 1 {
			_, _, _ = ws.ReadMessage() // later connections: wait to be closed
			return
		}
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","num_connections":1}`))
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"envelope_id":"e1","type":"interactive","payload":{"type":"block_actions","actions":[]}}`))
		_ = ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"disconnect","reason":"refresh_requested"}`))
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				return
			}
			acks <- string(data)
		}
	}))
	defer srv.Close()
	h := &lateAcker{release: make(chan struct{})}
	s := &Socket{Handler: h, Log: zerolog.Nop(), Open: func(context.Context) (string, error) {
		return "ws" + strings.TrimPrefix(srv.URL, "http"), nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		h.open()
		cancel()
		<-done
		h.wg.Wait()
	}()
	// The socket dials again once the reader has ended the first
	// connection (after the young-connection backoff).
	deadline := time.Now().Add(5 * time.Second)
	for opens.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the socket never reconnected")
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.open()
	select {
	case a := <-acks:
		if !strings.Contains(a, `"envelope_id":"e1"`) {
			t.Fatalf("frame %s, want the ack of e1", a)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the ack of an envelope read before the disconnect never reached Slack")
	}
}
