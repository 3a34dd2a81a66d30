package dsh

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/dsh/dshtest"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/asktest"
)

// TestRealHost drives a real deepseek-harness host (dsh 0.1.0-rc.8 and the
// fake model of the shared notes) through the bridge. It is gated: set
// SLACKASK_DSH_E2E=1. The first run installs the host into DSH_DIR
// (SLACKASK_DSH_DIR, else $HOME/.cache/slackask-dsh): about 18 minutes and
// 3.6 GB of memory, once per machine, so give it time:
//
//	SLACKASK_DSH_E2E=1 go test -race -run TestRealHost -timeout 60m -v ./dsh/
//
// The shared notes are found at ../../shared/dsh from the package
// directory, or at SLACKASK_DSH_SHARED.
func TestRealHost(t *testing.T) {
	base, modelLog := dshtest.RealHost(t)

	obs := dshtest.WatchQuestions(t, base)
	svc := newFakeService()
	stopBridge := runBridge(t, base, svc)
	defer func() { stopBridge(t) }()

	t.Run("answer", func(t *testing.T) {
		sid := dshtest.Prompt(t, base)
		call, ask := waitAsk(t, svc, sid)
		rpc := strings.TrimPrefix(call.In.IdempotencyKey, AgentPrefix)
		if seen, ok := obs.At(rpc); ok {
			t.Logf("TIMING question/requested → Create called: %v", call.At.Sub(seen))
		} else {
			t.Errorf("the observer never saw question/requested %s", rpc)
		}
		t.Logf("ask %s: agent %+v, %d questions", ask.ID, *ask.Agent, len(ask.Questions))
		if want := widgetQuestions(); !sameQuestions(ask.Questions, want) {
			t.Errorf("questions %s\nwant %s", mustJSONString(t, ask.Questions), mustJSONString(t, want))
		}

		// slackask restarts before anyone answers: the host replays the
		// question and the new bridge re-attaches to the same ask.
		stopBridge(t)
		creates := len(svc.createCalls())
		stopBridge = runBridge(t, base, svc)
		dshtest.WaitFor(t, time.Minute, "the re-attach", func() bool { return len(svc.createCalls()) > creates })
		if re := svc.createCalls()[creates]; re.Created || re.AskID != ask.ID {
			t.Errorf("after the restart Create %+v: want a re-attach to %s", re, ask.ID)
		}

		offset := dshtest.CountLines(t, modelLog)
		answered := time.Now()
		svc.answer(t, ask.ID, item("color", "Blue"), item("features", "Logging", "Tracing"))
		content, at := dshtest.WaitToolResult(t, modelLog, offset)
		t.Logf("TIMING answer in slackask → model's next request: %v", at.Sub(answered))
		const want = `{"answers":[{"id":"color","selected":["Blue"]},{"id":"features","selected":["Logging","Tracing"]}]}`
		if content != want {
			t.Errorf("the model received %s\nwant exactly %s", content, want)
		}
		time.Sleep(500 * time.Millisecond)
		for _, w := range svc.withdrawCalls() {
			if w.ID == ask.ID {
				t.Errorf("the answered ask was withdrawn: %+v", w)
			}
		}
	})

	t.Run("cancel", func(t *testing.T) {
		sid := dshtest.Prompt(t, base)
		_, ask := waitAsk(t, svc, sid)
		offset := dshtest.CountLines(t, modelLog)
		cancelled := time.Now()
		svc.cancel(t, ask.ID)
		content, at := dshtest.WaitToolResult(t, modelLog, offset)
		t.Logf("TIMING cancel in slackask → model's next request: %v; the model got: %s", at.Sub(cancelled), content)
		if !strings.Contains(strings.ToLower(content), "cancel") {
			t.Errorf("the model got %s, want a cancellation", content)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		sid := dshtest.Prompt(t, base)
		_, ask := waitAsk(t, svc, sid)
		interrupted := time.Now()
		if _, err := dshtest.RPC(base, "session.cancel", map[string]any{"sessionId": sid}); err != nil {
			t.Fatal(err)
		}
		var w asktest.WithdrawCall
		dshtest.WaitFor(t, time.Minute, "the withdrawal", func() bool {
			for _, c := range svc.withdrawCalls() {
				if c.ID == ask.ID {
					w = c
					return true
				}
			}
			return false
		})
		t.Logf("TIMING session.cancel → ask withdrawn: %v", w.At.Sub(interrupted))
		if w.Note != NoteAgentStopped {
			t.Errorf("note %q, want %q", w.Note, NoteAgentStopped)
		}
	})
}

// runBridge starts a bridge on the real host and returns its stop func,
// which reports to the test it is given.
func runBridge(t *testing.T, base string, svc *fakeService) func(*testing.T) {
	logs := &syncBuffer{}
	b, err := New(Config{URL: base, Channel: "CE2E", Service: svc,
		Logger:         zerolog.New(logs).With().Timestamp().Logger(),
		ReconcileAfter: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	dshtest.WaitFor(t, 30*time.Second, "the bridge to connect", func() bool { return b.Ready(ctx) == nil })
	var once sync.Once
	return func(t *testing.T) {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run = %v", err)
			}
			t.Logf("bridge log:\n%s", logs.String())
		})
	}
}

// waitAsk waits for the Create call of the session's question.
func waitAsk(t *testing.T, svc *fakeService, sessionID string) (asktest.CreateCall, interaction.Ask) {
	var call asktest.CreateCall
	dshtest.WaitFor(t, 3*time.Minute, "the ask of "+sessionID, func() bool {
		for _, c := range svc.createCalls() {
			if c.Err == nil && c.In.Agent != nil && c.In.Agent.ID == AgentPrefix+sessionID {
				call = c
				return true
			}
		}
		return false
	})
	return call, svc.ask(call.AskID)
}

func sameQuestions(a, b []interaction.Question) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
