package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/dsh/dshtest"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// TestRealDshHostThroughSlack is the whole path with a real
// deepseek-harness host: the agent's question reaches Slack (the fake),
// the scripted person answers it there, and the model's next request
// carries exactly {"answers":[…]}. Then the cancel and interrupt paths.
// Gated: SLACKASK_DSH_E2E=1 (see dshtest.RealHost).
func TestRealDshHostThroughSlack(t *testing.T) {
	base, modelLog := dshtest.RealHost(t)
	seen := dshtest.WatchQuestions(t, base)
	h := start(t, withConfig(func(c *config.Config) { c.DshURL = base }))

	t.Run("answer", func(t *testing.T) {
		dshtest.Prompt(t, base)
		msg, rpc := h.waitDshMessage(t, seen, 1)
		if at, ok := seen.At(rpc); ok {
			posted := h.postedAt(msg)
			t.Logf("TIMING question/requested → Slack message: %v", posted.Sub(at))
		}
		p := h.fake.Person(alice)
		ctx := ctxT(t)
		if _, err := p.Select(ctx, channel, msg.TS, control(0, "select"), "Blue"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Select(ctx, channel, msg.TS, control(1, "select"), "Logging", "Tracing"); err != nil {
			t.Fatal(err)
		}
		offset := dshtest.CountLines(t, modelLog)
		submitted := time.Now()
		if _, err := p.Click(ctx, channel, msg.TS, control(-1, "submit")); err != nil {
			t.Fatal(err)
		}
		content, at := dshtest.WaitToolResult(t, modelLog, offset)
		t.Logf("TIMING Submit → the model's next request: %v", at.Sub(submitted))
		const want = `{"answers":[{"id":"color","selected":["Blue"]},{"id":"features","selected":["Logging","Tracing"]}]}`
		if content != want {
			t.Fatalf("the model received %s\nwant exactly %s", content, want)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		dshtest.Prompt(t, base)
		msg, _ := h.waitDshMessage(t, seen, 2)
		offset := dshtest.CountLines(t, modelLog)
		if _, err := h.fake.Person(alice).Click(ctxT(t), channel, msg.TS, control(-1, "cancel")); err != nil {
			t.Fatal(err)
		}
		content, _ := dshtest.WaitToolResult(t, modelLog, offset)
		if !strings.Contains(strings.ToLower(content), "cancel") {
			t.Fatalf("the model received %q, want a cancellation", content)
		}
	})
	t.Run("interrupt", func(t *testing.T) {
		sid := dshtest.Prompt(t, base)
		msg, _ := h.waitDshMessage(t, seen, 3)
		if _, err := dshtest.RPC(base, "session.cancel", map[string]any{"sessionId": sid}); err != nil {
			t.Fatal(err)
		}
		h.waitMessage(interaction.Ask{Channel: channel, TS: msg.TS}, "said the agent stopped waiting", func(m slackfake.Message) bool {
			return strings.Contains(string(m.Blocks), "stopped waiting")
		})
	})
}

// waitDshMessage waits for the n-th top-level message of the channel and
// returns it with the rpc id of the newest question seen on the mux.
func (h *harness) waitDshMessage(t *testing.T, seen *dshtest.QuestionWatch, n int) (slackfake.Message, string) {
	t.Helper()
	var msg slackfake.Message
	if err := h.fake.WaitFor(ctxT(t), func() bool {
		var top []slackfake.Message
		for _, m := range h.fake.Messages(channel) {
			if m.ThreadTS == "" || m.ThreadTS == m.TS {
				top = append(top, m)
			}
		}
		if len(top) >= n {
			msg = top[n-1]
			return true
		}
		return false
	}); err != nil {
		t.Fatalf("question %d never reached Slack", n)
	}
	return msg, seen.Newest()
}

// postedAt is when the fake posted msg: its ts is the fake's clock then.
func (h *harness) postedAt(msg slackfake.Message) time.Time {
	sec, frac, _ := strings.Cut(msg.TS, ".")
	s, _ := strconv.ParseInt(sec, 10, 64)
	us, _ := strconv.ParseInt(frac, 10, 64)
	return time.Unix(s, us*1000)
}
