package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// threadTexts returns the texts of the replies under ts in the fake's
// channel that contain s.
func threadTexts(fake *slackfake.Server, ts, s string) []string {
	var out []string
	for _, m := range fake.Messages(channel) {
		if m.ThreadTS == ts && m.TS != ts && strings.Contains(m.Text, s) {
			out = append(out, m.Text)
		}
	}
	return out
}

// Reminders with remindEvery repeat in the thread, each mentioning only
// who still owes an answer (on a team ask, not who answered), and stop
// once the ask is answered.
func TestRemindersRepeatAndStopWhenAnswered(t *testing.T) {
	h := start(t)
	in := ask1(question("a", "Ship?", "yes", "no"))
	in.Responders = []string{alice, bob}
	in.Responses = interaction.ResponseCount{N: 2}
	in.RemindAfter = interaction.Duration(5 * time.Minute)
	in.RemindEvery = interaction.Duration(10 * time.Minute)
	ask := h.create(in)
	reminders := func() []string { return threadTexts(h.fake, ask.TS, "Reminder") }
	wait := func(n int) {
		t.Helper()
		if err := h.fake.WaitFor(ctxT(t), func() bool { return len(reminders()) == n }); err != nil {
			t.Fatalf("%d reminders, want %d: %q", len(reminders()), n, reminders())
		}
	}
	h.clock.Advance(5 * time.Minute)
	wait(1)
	if r := reminders()[0]; !strings.Contains(r, "<@"+alice+">") || !strings.Contains(r, "<@"+bob+">") {
		t.Fatalf("first reminder: %q", r)
	}
	// Alice answers: the next reminder is for bob only.
	if _, err := h.fake.Person(alice).Click(ctxT(t), channel, ask.TS, tap("yes")); err != nil {
		t.Fatal(err)
	}
	if err := h.fake.WaitFor(ctxT(t), func() bool { return len(h.get(ask.ID).Responses) == 1 }); err != nil {
		t.Fatal("alice's response never stored")
	}
	h.clock.Advance(10 * time.Minute)
	wait(2)
	if r := reminders()[1]; strings.Contains(r, "<@"+alice+">") || !strings.Contains(r, "<@"+bob+">") {
		t.Fatalf("second reminder: %q", r)
	}
	if _, err := h.fake.Person(bob).Click(ctxT(t), channel, ask.TS, tap("no")); err != nil {
		t.Fatal(err)
	}
	if got := h.waitAsk(ask.ID); got.Status != interaction.StatusAnswered {
		t.Fatalf("status %s", got.Status)
	}
	h.clock.Advance(3 * time.Hour)
	// A sentinel ask's reminder, due after the ones that must not come.
	s := ask1(question("s", "Sentinel?", "yes", "no"))
	s.RemindAfter = interaction.Duration(time.Minute)
	sentinel := h.create(s)
	h.clock.Advance(time.Minute)
	if err := h.fake.WaitFor(ctxT(t), func() bool { return len(threadTexts(h.fake, sentinel.TS, "Reminder")) == 1 }); err != nil {
		t.Fatal("the sentinel's reminder never came")
	}
	if n := len(reminders()); n != 2 {
		t.Fatalf("%d reminders after the answer, want the 2 before it", n)
	}
}

// tap finds the button that picks label (a one-question ask's options are
// buttons).
func tap(label string) slackfake.Finder {
	return func(blockID, actionID string, el map[string]any) bool {
		t, _ := el["text"].(map[string]any)
		return el["type"] == "button" && t["text"] == label
	}
}

// Escalation steps on three PostgreSQL replicas, one killed with SIGKILL
// before the steps' time: every step of every ask fires once (one thread
// notice, firedAt set, its person added), whichever replica created the
// ask, and the person added may answer.
func TestEscalationFiresOnceAcrossKilledReplicas(t *testing.T) {
	r := newReplicaRig(t, 3, 1)
	r.fake.AddUser(carol, "carol")
	const n = 12
	var asks []interaction.Ask
	for i := range n {
		in := ask1(question("a", "Deploy?", "yes", "no"))
		in.Responders = []string{alice}
		in.Timeout = interaction.Duration(time.Minute)
		in.Escalation = []interaction.EscalationStep{
			{After: interaction.Duration(4 * time.Second), Responders: []string{bob}},
			{After: interaction.Duration(6 * time.Second), Responders: []string{carol}},
		}
		asks = append(asks, r.create(i%3, in))
	}
	r.kill9(0)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	done := func() bool {
		for _, a := range asks {
			if len(threadTexts(r.fake, a.TS, "<@"+bob+">")) < 1 || len(threadTexts(r.fake, a.TS, "<@"+carol+">")) < 1 {
				return false
			}
		}
		return true
	}
	if err := r.fake.WaitFor(ctx, done); err != nil {
		t.Fatal("the steps never all fired")
	}
	time.Sleep(3 * time.Second) // a second firing would post by now
	for _, a := range asks {
		if b, c := len(threadTexts(r.fake, a.TS, "<@"+bob+">")), len(threadTexts(r.fake, a.TS, "<@"+carol+">")); b != 1 || c != 1 {
			t.Fatalf("%s: %d notices for step 0, %d for step 1; want 1 each", a.ID, b, c)
		}
		got, err := r.get(1, a.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Escalation) != 2 || got.Escalation[0].FiredAt == nil || got.Escalation[1].FiredAt == nil ||
			got.Escalation[0].FiredAt.Sub(got.CreatedAt) < 4*time.Second {
			t.Fatalf("%s: escalation %+v", a.ID, got.Escalation)
		}
	}
	// Carol, added by the second step, answers one of them.
	a := asks[1]
	if _, err := r.fake.Person(carol).Click(ctxT(t), channel, a.TS, func(_, _ string, el map[string]any) bool {
		txt, _ := el["text"].(map[string]any)
		return el["type"] == "button" && txt["text"] == "no"
	}); err != nil {
		t.Fatal(err)
	}
	got, err := r.get(2, a.ID, 10*time.Second)
	if err != nil || got.Status != interaction.StatusAnswered || got.AnsweredBy == nil || got.AnsweredBy.ID != carol {
		t.Fatalf("carol's answer: %+v %v", got, err)
	}
}
