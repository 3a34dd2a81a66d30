package asks

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
)

// A message Slack says is gone (deleted, or its conversation gone after a
// dev emulator restart) is not updated again: the ask keeps its outcome,
// the record is synced and due for nothing, and it is logged once (issue
// 29 item 12). A later change of the record does not try again either.
func TestGoneMessageIsNotRetried(t *testing.T) {
	r := newRig(t)
	var logs lockedBuffer
	svc, err := New(Config{Store: r.st, Surface: r.surf, DefaultChannel: chanID, Logger: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	r.svc = svc
	r.run()
	ctx := context.Background()
	ask := r.create(interaction.AskInput{Request: twoQuestions()})
	r.surf.mu.Lock()
	r.surf.updateErr = fmt.Errorf("chat.update: %w: message_not_found", ErrMessageGone)
	r.surf.mu.Unlock()
	if _, err := svc.Other(ctx, click(ask, alice), 0, "later"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "marked gone", func() bool { rec, _ := r.st.Get(ctx, ask.ID); return rec.MessageGone && rec.Synced })
	// The ask still ends, and its end does not try the message again.
	if got, err := svc.Withdraw(ctx, ask.ID); err != nil || got.Status != interaction.StatusAborted {
		t.Fatalf("withdraw: %+v %v", got, err)
	}
	waitFor(t, "the end synced", func() bool {
		rec, _ := r.st.Get(ctx, ask.ID)
		return rec.Status == interaction.StatusAborted && rec.Synced && rec.WakeAt.IsZero()
	})
	if n := r.surf.count(&r.surf.updates, ask.ID); n != 1 {
		t.Fatalf("%d updates of a gone message, want the one that found it gone", n)
	}
	if c := strings.Count(logs.String(), "is not updated again"); c != 1 {
		t.Fatalf("logged %d times, want once:\n%s", c, logs.String())
	}
	if got, _ := svc.Get(ctx, ask.ID); got.Status != interaction.StatusAborted || got.Error == nil {
		t.Fatalf("the ask lost its outcome: %+v", got)
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger written from several
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// More responses than people who may answer is refused in words that
// count right: "only 1 person", "only 2 people" (issue 29 item 7).
func TestTooManyResponsesWording(t *testing.T) {
	r := newRig(t)
	for _, tc := range []struct {
		in   interaction.AskInput
		want string
	}{
		{interaction.AskInput{Request: twoQuestions(), User: alice, Responses: interaction.ResponseCount{N: 2}}, "responses 2: only 1 person may answer this ask"},
		{interaction.AskInput{Request: twoQuestions(), Responders: []string{alice, "U0BOB"}, Responses: interaction.ResponseCount{N: 3}}, "responses 3: only 2 people may answer this ask"},
	} {
		if _, err := r.svc.Create(context.Background(), tc.in); interaction.ErrorMessage(err) != tc.want {
			t.Errorf("%v, want %q", err, tc.want)
		}
	}
}
