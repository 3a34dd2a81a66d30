package slackfake

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
)

func TestHelloAndPings(t *testing.T) {
	srv := newServer(t, Config{PingInterval: 30 * time.Millisecond})
	b := startBot(t, srv, nil)
	select {
	case hello := <-b.hellos:
		if hello.NumConnections != 1 || hello.ConnectionInfo.AppID != "A0FAKE" || hello.DebugInfo.ApproximateConnectionTime != 18060 {
			t.Fatalf("hello %+v", hello)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no hello")
	}
	if err := srv.WaitFor(testCtx(t), func() bool { return srv.Pongs() >= 3 }); err != nil {
		t.Fatalf("pings not answered: %d pongs", srv.Pongs())
	}
}

func TestConnectionsOpenIsSingleUse(t *testing.T) {
	srv := newServer(t, Config{})
	api := newAPI(t, srv)
	_, wsURL, err := api.StartSocketModeContext(testCtx(t))
	if err != nil || !strings.HasPrefix(wsURL, "ws://127.0.0.1:") {
		t.Fatalf("apps.connections.open = %q %v", wsURL, err)
	}
	conn, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var hello map[string]any
	if err := conn.ReadJSON(&hello); err != nil || hello["type"] != "hello" {
		t.Fatalf("first frame %v %v", hello, err)
	}
	_, resp, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("second dial with the same URL: %v", err)
	}
	botAsApp := slack.New(srv.cfg.BotToken, slack.OptionAppLevelToken(srv.cfg.BotToken), slack.OptionAPIURL(srv.APIURL()))
	if _, _, err := botAsApp.StartSocketModeContext(testCtx(t)); err == nil || err.Error() != "not_allowed_token_type" {
		t.Fatalf("bot token on apps.connections.open: %v", err)
	}
}

// rawSocket connects a bare gorilla client and reads its hello.
func rawSocket(t *testing.T, srv *Server) *websocket.Conn {
	t.Helper()
	_, wsURL, err := newAPI(t, srv).StartSocketModeContext(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var hello map[string]any
	if err := conn.ReadJSON(&hello); err != nil {
		t.Fatal(err)
	}
	return conn
}

func TestNonAckFramesAreIgnored(t *testing.T) {
	srv := newServer(t, Config{})
	conn := rawSocket(t, srv)
	type result struct {
		ack json.RawMessage
		err error
	}
	done := make(chan result, 1)
	go func() {
		ack, err := srv.Deliver(testCtx(t), map[string]any{"type": "block_actions"})
		done <- result{ack, err}
	}()
	var env struct {
		EnvelopeID string          `json:"envelope_id"`
		Type       string          `json:"type"`
		Payload    json.RawMessage `json:"payload"`
		Accepts    bool            `json:"accepts_response_payload"`
	}
	if err := conn.ReadJSON(&env); err != nil || env.Type != "interactive" || !env.Accepts || env.EnvelopeID == "" {
		t.Fatalf("envelope %+v %v", env, err)
	}
	for _, junk := range []string{"not json", `{"type":"hello"}`, `{"envelope_id":"unknown"}`} {
		if err := conn.WriteMessage(websocket.TextMessage, []byte(junk)); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.WriteJSON(map[string]any{"envelope_id": env.EnvelopeID, "payload": map[string]any{"a": 1}}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || string(r.ack) != `{"a":1}` {
		t.Fatalf("ack %s %v", r.ack, r.err)
	}
}

func TestDisconnectReconnects(t *testing.T) {
	srv := newServer(t, Config{})
	b := startBot(t, srv, nil)
	<-b.hellos
	srv.Disconnect("refresh_requested")
	err := srv.WaitFor(testCtx(t), func() bool {
		return srv.CallCount("apps.connections.open") >= 2 && srv.Connections() == 1
	})
	if err != nil {
		t.Fatalf("no reconnect: %d opens, %d connections", srv.CallCount("apps.connections.open"), srv.Connections())
	}
	if _, err := srv.Deliver(testCtx(t), map[string]any{"type": "block_actions"}); err != nil {
		t.Fatalf("deliver after reconnect: %v", err)
	}
}

func TestAckStatsAndTimeouts(t *testing.T) {
	srv := newServer(t, Config{AckTimeout: 300 * time.Millisecond})
	startBot(t, srv, func(b *bot, req socketmode.Request, cb slack.InteractionCallback) {
		if cb.CallbackID != "silent" {
			b.ack(req, map[string]any{"n": 1})
		}
	})
	ctx := testCtx(t)
	if !srv.LastSent().IsZero() {
		t.Fatal("LastSent before any envelope")
	}
	for range 5 {
		before := time.Now()
		ack, err := srv.Deliver(ctx, map[string]any{"type": "block_actions"})
		if err != nil || string(ack) != `{"n":1}` {
			t.Fatalf("deliver: %s %v", ack, err)
		}
		if sent := srv.LastSent(); sent.Before(before) || sent.After(time.Now()) {
			t.Fatalf("LastSent %v outside the Deliver call", sent)
		}
	}
	p50, p99, maxLat, n := srv.AckStats()
	if n != 5 || p50 <= 0 || p50 > p99 || p99 > maxLat || len(srv.AckLatencies()) != 5 {
		t.Fatalf("AckStats = %v %v %v %d", p50, p99, maxLat, n)
	}
	if _, err := srv.Deliver(ctx, map[string]any{"type": "block_actions", "callback_id": "silent"}); !errors.Is(err, ErrAckTimeout) {
		t.Fatalf("unacked envelope: %v", err)
	}
	if _, err := srv.Deliver(ctx, func() {}); err == nil {
		t.Fatal("unmarshalable payload accepted")
	}
}

func TestDeliverWithoutConnection(t *testing.T) {
	srv := newServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := srv.Deliver(ctx, map[string]any{"type": "block_actions"})
	if !errors.Is(err, ErrNoConnection) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
}

func TestCloseWithClientConnected(t *testing.T) {
	srv := newServer(t, Config{})
	startBot(t, srv, nil)
	events, cancel := srv.Subscribe()
	defer cancel()
	srv.Close()
	srv.Close()
	for range events { // closed by Close
	}
	if err := srv.WaitConnected(context.Background(), 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitConnected after Close: %v", err)
	}
	if _, err := srv.Deliver(context.Background(), map[string]any{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Deliver after Close: %v", err)
	}
}

func TestSubscribe(t *testing.T) {
	srv := newServer(t, Config{})
	events, cancel := srv.Subscribe()
	defer cancel()
	api := newAPI(t, srv)
	_, ts, err := api.PostMessage("C1", slack.MsgOptionText("x", false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := api.UpdateMessage("C1", ts, slack.MsgOptionText("y", false)); err != nil {
		t.Fatal(err)
	}
	want := []Event{{Type: EventMessagePosted, Channel: "C1", TS: ts}, {Type: EventMessageUpdated, Channel: "C1", TS: ts}}
	for _, w := range want {
		select {
		case got := <-events:
			if got != w {
				t.Fatalf("event %+v, want %+v", got, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s event", w.Type)
		}
	}
}

func TestRoundRobin(t *testing.T) {
	srv := newServer(t, Config{})
	b1 := startBot(t, srv, nil)
	b2 := startBot(t, srv, nil)
	if err := srv.WaitConnected(testCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	if h := <-b2.hellos; h.NumConnections != 2 {
		t.Fatalf("second hello says %d connections", h.NumConnections)
	}
	for range 4 {
		if _, err := srv.Deliver(testCtx(t), map[string]any{"type": "block_actions"}); err != nil {
			t.Fatal(err)
		}
	}
	if len(b1.got) != 2 || len(b2.got) != 2 {
		t.Fatalf("payloads per socket: %d and %d, want 2 and 2 (each payload to ONE socket)", len(b1.got), len(b2.got))
	}
}
