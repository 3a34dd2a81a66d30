package dsh

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/dsh/dshtest"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/asktest"
	"github.com/slackask/slackask/internal/syncbuf"
)

// syncBuffer collects log lines from many goroutines.
type syncBuffer = syncbuf.Buffer

// harness is a running Bridge between a stand-in host and a fake service.
type harness struct {
	t      *testing.T
	host   *dshtest.Host
	svc    *fakeService
	b      *Bridge
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// newHost starts a stand-in host, closed at cleanup after checking that no
// client ever sent a frame or an Origin header.
func newHost(t *testing.T) *dshtest.Host {
	t.Helper()
	h := dshtest.New()
	t.Cleanup(func() {
		if n := h.ClientFrames(); n != 0 {
			t.Errorf("clients sent %d frames on the downlink-only mux", n)
		}
		for _, c := range h.Connects() {
			if c.Origin != "" {
				t.Errorf("mux handshake carried Origin %q", c.Origin)
			}
			if !strings.HasPrefix(c.Host, "127.0.0.1:") {
				t.Errorf("mux handshake Host %q is not loopback", c.Host)
			}
		}
		h.Close()
	})
	return h
}

func testConfig(h *dshtest.Host, svc interaction.AskService) Config {
	return Config{
		URL: h.URL, Channel: "CDSH", Service: svc,
		Backoff:         Backoff{Min: 5 * time.Millisecond, Max: 50 * time.Millisecond},
		RespondAttempts: 4, ReconcileAfter: -1,
	}
}

// start runs a bridge until the test ends and waits for it to connect.
func start(t *testing.T, h *dshtest.Host, svc *fakeService, mods ...func(*Config)) *harness {
	t.Helper()
	cfg := testConfig(h, svc)
	for _, m := range mods {
		m(&cfg)
	}
	logs := &syncBuffer{}
	cfg.Logger = zerolog.New(logs).With().Timestamp().Logger()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	hs := &harness{t: t, host: h, svc: svc, b: b, logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { hs.done <- b.Run(ctx) }()
	t.Cleanup(func() {
		hs.stop()
		if t.Failed() {
			t.Logf("bridge log:\n%s", logs.String())
		}
	})
	eventually(t, "the bridge to connect", func() bool { return b.Ready(context.Background()) == nil })
	return hs
}

// idle waits until the bridge serves no question: every goroutine that
// could still reply to the host or withdraw an ask has returned. Tests that
// check that something did not happen wait for it instead of sleeping.
func (hs *harness) idle() {
	hs.t.Helper()
	eventually(hs.t, "the bridge to finish its questions", func() bool {
		hs.b.mu.Lock()
		defer hs.b.mu.Unlock()
		return len(hs.b.questions) == 0
	})
}

// logCount returns how many lines of the bridge's log contain s.
func (hs *harness) logCount(s string) int { return strings.Count(hs.logs.String(), s) }

// stop ends Run and waits for it; idempotent.
func (hs *harness) stop() {
	hs.t.Helper()
	hs.cancel()
	select {
	case err, ok := <-hs.done:
		if ok && err != nil {
			hs.t.Errorf("Run returned %v", err)
		}
		if ok {
			close(hs.done)
		}
	case <-time.After(15 * time.Second):
		hs.t.Fatal("Run did not return after its context ended")
	}
}

// waitResult waits for the host's result of a question.
func waitResult(t *testing.T, h *dshtest.Host, rpcID string) dshtest.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := h.Wait(ctx, rpcID)
	if err != nil {
		t.Fatalf("question %s not settled: %v", rpcID, err)
	}
	return r
}

// waitWithdrawal waits for a WithdrawWithNote of the ask and returns its note.
func waitWithdrawal(t *testing.T, svc *fakeService, askID string) asktest.WithdrawCall {
	t.Helper()
	var w asktest.WithdrawCall
	eventually(t, "a withdrawal of "+askID, func() bool {
		for _, c := range svc.withdrawCalls() {
			if c.ID == askID {
				w = c
				return true
			}
		}
		return false
	})
	return w
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "frames", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// widgetQuestions are the questions of the captured question/requested
// frame (and of the fake model's default).
func widgetQuestions() []interaction.Question {
	return []interaction.Question{
		{ID: "color", Question: "Which color should the widget use?", Header: "Color", Options: []interaction.Option{
			{Label: "Red (Recommended)", Description: "Warm and visible."},
			{Label: "Blue", Description: "Calm and neutral."},
		}},
		{ID: "features", Question: "Which features do you want?", Header: "Features", MultiSelect: true, Options: []interaction.Option{
			{Label: "Logging", Description: "Write a log file."},
			{Label: "Metrics", Description: "Expose counters."},
			{Label: "Tracing", Description: "Emit spans."},
		}},
	}
}

func mustJSONString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func item(id string, selected ...string) interaction.AnswerItem {
	return interaction.AnswerItem{ID: id, Selected: append([]string{}, selected...)}
}

func customItem(id, custom string, selected ...string) interaction.AnswerItem {
	return interaction.AnswerItem{ID: id, Selected: append([]string{}, selected...), Custom: custom}
}

// upgraded returns the mux handshakes that became connections.
func upgraded(h *dshtest.Host) []dshtest.Connect {
	var out []dshtest.Connect
	for _, c := range h.Connects() {
		if c.Upgraded {
			out = append(out, c)
		}
	}
	return out
}

func zerologDiscard() zerolog.Logger { return zerolog.Nop() }
