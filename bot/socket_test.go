package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store/memory"
)

func TestSocketRefusedAppTokenStopsRun(t *testing.T) {
	for _, code := range []string{"invalid_auth", "token_revoked", "not_authed", "account_inactive"} {
		t.Run(code, func(t *testing.T) {
			r := newRig(t)
			r.fake.FailNext("apps.connections.open", 1, slackfake.Failure{Error: code})
			b := r.wire()
			err := runWith(r.ctx(), b.bot, b.Service)
			if interaction.ErrorCode(err) != interaction.SlackError {
				t.Fatalf("Run = %v, want a SLACK_ERROR", err)
			}
			if b.Ready(context.Background()) == nil {
				t.Fatal("ready after a refused token")
			}
		})
	}
}

func TestSocketRetriesTransientConnectFailure(t *testing.T) {
	r := newRig(t)
	r.fake.FailNext("apps.connections.open", 1, slackfake.Failure{Status: 500})
	start := time.Now()
	b, _ := r.start() // waits until ready
	if b.Ready(context.Background()) != nil {
		t.Fatal("not ready")
	}
	if took := time.Since(start); took < 790*time.Millisecond {
		t.Fatalf("reconnected after %v, want the 1 s (±20 %%) backoff", took)
	}
}

// After Slack asks for a reconnect, the bot opens a new connection,
// answers the fake's pings on it and handles clicks sent over it.
func TestSocketReconnectsWhenSlackAsks(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	r.fake.Disconnect("refresh_requested")
	r.waitFor("reconnected", func() bool { return r.fake.Connections() == 1 && b.Ready(context.Background()) == nil })
	opens := r.fake.CallCount("apps.connections.open")
	if opens != 2 {
		t.Fatalf("apps.connections.open called %d times, want 2", opens)
	}
	pongs := r.fake.Pongs()
	r.waitFor("pings answered", func() bool { return r.fake.Pongs() > pongs })

	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor("posted", func() bool { a, _ := b.Get(context.Background(), ask.ID); return a.TS != "" })
	a, _ := b.Get(r.ctx(), ask.ID)
	if _, err := r.fake.Person(alice).Click(r.ctx(), chanID, a.TS, buttonFinder(0, "skip")); err != nil {
		t.Fatal(err)
	}
	r.waitFor("skip recorded", func() bool {
		rec, _ := r.store.Get(context.Background(), ask.ID)
		return len(rec.Progress) > 0 && rec.Progress[0].Skipped
	})
}

// Every envelope is acked, the ones whose ack carries nothing before the
// bot has decoded them: a block_actions envelope for an ask the store
// cannot find is acked all the same.
func TestSocketAcksEveryEnvelope(t *testing.T) {
	r := newRig(t)
	r.start()
	for _, p := range []map[string]any{
		{"type": "block_actions", "user": map[string]any{"id": alice}, "actions": []any{map[string]any{"action_id": "sa.anosuchask.1.0.skip", "block_id": "sa.anosuchask.1.0.controls"}}},
		{"type": "view_closed", "user": map[string]any{"id": alice}, "view": map[string]any{"id": "V1"}},
		{"type": "shortcut", "callback_id": "x"},
		{"type": "view_submission", "user": map[string]any{"id": alice}, "view": map[string]any{"id": "V1", "callback_id": "unknown"}},
	} {
		ack, err := r.fake.Deliver(r.ctx(), p)
		if err != nil {
			t.Fatalf("%s: %v", p["type"], err)
		}
		if len(ack) != 0 && string(ack) != "null" {
			t.Fatalf("%s: ack payload %s, want none", p["type"], ack)
		}
	}
	if _, _, _, n := r.fake.AckStats(); n != 4 {
		t.Fatalf("%d acks, want 4", n)
	}
}

func TestConnectWait(t *testing.T) {
	for _, c := range []struct {
		name     string
		failures int
		err      error
		want     time.Duration
	}{
		{"first", 1, errors.New("x"), time.Second},
		{"third", 3, errors.New("x"), 4 * time.Second},
		{"capped", 40, errors.New("x"), 30 * time.Second},
		{"retry-after", 2, &slack.RateLimitedError{RetryAfter: 7 * time.Second}, 7 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := backoff.Backoff{Jitter: -1}
			for range c.failures - 1 {
				b.Next()
			}
			var got time.Duration
			ctx, cancel := context.WithCancel(context.Background())
			r := backoff.Retry{Pause: &b, OnRetry: func(_ int, _ error, p time.Duration) { got = p; cancel() }}
			_ = r.Do(ctx, func(int) error { return retryConnect(c.err) })
			if got != c.want {
				t.Fatalf("pause after a failed connect = %v, want %v", got, c.want)
			}
		})
	}
}

// A Socket Mode link that drops every connection before hello is retried
// with the connect backoff, not at once in a loop.
func TestSocketDroppedBeforeHelloBacksOff(t *testing.T) {
	var opens atomic.Int64
	upgrader := websocket.Upgrader{}
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/link":
			if ws, err := upgrader.Upgrade(w, r, nil); err == nil {
				_ = ws.Close() // no hello
			}
		case "/api/apps.connections.open":
			opens.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = fmt.Fprintf(w, `{"ok":true,"url":"ws%s/link"}`, strings.TrimPrefix(ts.URL, "http"))
		default: // auth.test and anything else
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"ok":true,"team_id":"T1","user_id":"U1","bot_id":"B1"}`))
		}
	}))
	defer ts.Close()
	api := slack.New("xoxb-fake", slack.OptionAppLevelToken("xapp-fake"), slack.OptionAPIURL(ts.URL+"/api/"))
	st := memory.New()
	b, err := New(context.Background(), Config{API: api, Secrets: st, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := asks.New(asks.Config{Store: st, Surface: b, DefaultChannel: chanID, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := runWith(ctx, b, svc); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run = %v", err)
	}
	if n := opens.Load(); n < 2 || n > 3 {
		t.Fatalf("apps.connections.open called %d times in 1.5 s, want 2 (at once, then after 1 s)", n)
	}
}

// TestAckFrameAsJSONMarshal: ackFrame's bytes are json.Marshal's for any
// id and payload, whether it appends them itself or not.
func TestAckFrameAsJSONMarshal(t *testing.T) {
	ids := []string{
		"1d2f8a3c-5e6b-4c7d-8e9f-0a1b2c3d4e5f", "", "a\"b", `a\b`, "a<b>c&d", "é", "\u2028", "tab\there", "\x7f", "\x00",
	}
	for _, id := range ids {
		for _, payload := range []any{nil, map[string]string{"response_action": "clear"}} {
			got, err := ackFrame(id, payload)
			want, werr := json.Marshal(socketmode.Response{EnvelopeID: id, Payload: payload})
			if err != nil || werr != nil || !bytes.Equal(got, want) {
				t.Errorf("ackFrame(%q, %v) = %s, %v; json.Marshal gives %s, %v", id, payload, got, err, want, werr)
			}
		}
	}
}

func FuzzAckFrame(f *testing.F) {
	f.Add("1d2f8a3c-5e6b-4c7d-8e9f-0a1b2c3d4e5f")
	f.Add("a<b\"c\\d\u2028")
	f.Fuzz(func(t *testing.T, id string) {
		got, err := ackFrame(id, nil)
		want, werr := json.Marshal(socketmode.Response{EnvelopeID: id})
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("ackFrame(%q) = %s, %v; json.Marshal gives %s, %v", id, got, err, want, werr)
		}
	})
}

// TestRefusedAuthNeverOpens: a token auth.test refuses stops Run, and the
// bot never opens, so the lifecycle's recovery never posts with it.
func TestRefusedAuthNeverOpens(t *testing.T) {
	r := newRig(t)
	r.fake.FailNext("auth.test", 1, slackfake.Failure{Error: "invalid_auth"})
	b := r.wire()
	if err := b.bot.Run(r.ctx(), b.Service); err == nil {
		t.Fatal("Run returned nil after a refused auth.test")
	}
	select {
	case <-b.bot.Opened():
		t.Fatal("opened after a refused auth.test")
	default:
	}
	// The same bot, once auth.test answers, opens.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.bot.Run(ctx, b.Service) }()
	<-b.bot.Opened()
	cancel()
	<-done
}
