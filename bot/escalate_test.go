package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

const carol = "U0CAROL"

// threadReplies returns the texts of the replies in ask's thread that
// contain s.
func (r *rig) threadReplies(ts, s string) []string {
	var out []string
	for _, m := range r.fake.Messages(chanID) {
		if m.ThreadTS == ts && m.TS != ts && strings.Contains(m.Text, s) {
			out = append(out, m.Text)
		}
	}
	return out
}

// An escalation step adds bob: refused before it, told in the thread at
// its time, shown on the message, and then his answer counts.
func TestEscalationInSlack(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("x")}},
		Responders: []string{alice}, Timeout: interaction.Duration(2 * time.Hour),
		Escalation: []interaction.EscalationStep{{After: interaction.Duration(30 * time.Minute), Responders: []string{bob}}}})
	if err != nil {
		t.Fatal(err)
	}
	p := r.fake.Person(bob)
	if _, err := p.Select(r.ctx(), chanID, ask.TS, selectFinder(0), "yes"); err != nil {
		t.Fatal(err)
	}
	r.waitFor("bob is refused before the step", r.ephemeralHas(bob, "can't answer"))
	r.clock.Advance(30 * time.Minute)
	r.waitFor("the thread reply mentioning bob", func() bool { return len(r.threadReplies(ask.TS, "<@"+bob+">")) == 1 })
	if got := r.threadReplies(ask.TS, "<@"+bob+">")[0]; !strings.Contains(got, "waits for you too") || !strings.Contains(got, "30m") {
		t.Fatalf("the notice: %q", got)
	}
	r.waitFor("the message names bob", r.messageHas(ask.TS, "@"+bob))
	if _, err := p.Select(r.ctx(), chanID, ask.TS, selectFinder(0), "yes"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(r.ctx(), 5*time.Second)
	defer cancel()
	end, err := b.Wait(wctx, ask.ID)
	if err != nil || end.Status != interaction.StatusAnswered || end.AnsweredBy.ID != bob || end.Escalation[0].FiredAt == nil {
		t.Fatalf("after the step: %+v %v", end, err)
	}
	if n := len(r.threadReplies(ask.TS, "<@"+bob+">")); n != 1 {
		t.Fatalf("%d notices", n)
	}
}

// Alice hands the ask to carol through the modal: carol is told in the
// thread and may answer; the resource lists the hand-off with names.
func TestHandoffInSlack(t *testing.T) {
	r := newRig(t)
	r.fake.AddUser(carol, "carol")
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions(), Responders: []string{alice}})
	if err != nil {
		t.Fatal(err)
	}
	// Bob may not answer, so he may not hand it off either.
	if _, err := r.fake.Person(bob).Click(r.ctx(), chanID, ask.TS, buttonFinder(-1, "handoff")); err != nil {
		t.Fatal(err)
	}
	r.waitFor("bob is refused", r.ephemeralHas(bob, "can't answer"))
	p := r.fake.Person(alice)
	if _, err := p.Click(r.ctx(), chanID, ask.TS, buttonFinder(-1, "handoff")); err != nil {
		t.Fatal(err)
	}
	view, err := p.WaitView(r.ctx())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.SelectInView(r.ctx(), view.ID, slackfake.ByActionID("to"), alice); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(r.ctx(), view.ID); err == nil || !strings.Contains(err.Error(), "other than yourself") {
		t.Fatalf("a hand-off to oneself: %v", err)
	}
	if _, err := p.SelectInView(r.ctx(), view.ID, slackfake.ByActionID("to"), carol); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(r.ctx(), view.ID); err != nil {
		t.Fatal(err)
	}
	got, _ := b.Get(r.ctx(), ask.ID)
	if len(got.Handoffs) != 1 || got.Handoffs[0].From.ID != alice || got.Handoffs[0].To != (interaction.User{ID: carol, Name: "carol"}) {
		t.Fatalf("handoffs %+v", got.Handoffs)
	}
	r.waitFor("carol is told", func() bool { return len(r.threadReplies(ask.TS, "<@"+carol+"> <@"+alice+"> handed")) == 1 })
	r.waitFor("the message names carol", r.messageHas(ask.TS, "@"+carol))
	c := r.fake.Person(carol)
	for q := range 2 {
		if _, err := c.Select(r.ctx(), chanID, ask.TS, selectFinder(q), "no"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Click(r.ctx(), chanID, ask.TS, buttonFinder(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(r.ctx(), 5*time.Second)
	defer cancel()
	end, err := b.Wait(wctx, ask.ID)
	if err != nil || end.Status != interaction.StatusAnswered || end.AnsweredBy.ID != carol {
		t.Fatalf("carol's answer: %+v %v", end, err)
	}
}

// A step with notify "dm" and a channel sends the ask to the added person
// by DM and posts it in the channel when it fires (not before); bob
// answers in his DM and every copy is drawn ended.
func TestEscalationCopiesInSlack(t *testing.T) {
	r := newRig(t)
	r.fake.AddChannel("C0OPS", "ops")
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("x")}},
		Responders: []string{alice},
		Escalation: []interaction.EscalationStep{{After: interaction.Duration(30 * time.Minute), Responders: []string{bob}, Channel: "C0OPS", Notify: interaction.NotifyDM}}})
	if err != nil {
		t.Fatal(err)
	}
	dm := slackfake.DMChannelID(bob)
	if n := len(r.fake.Messages(dm)) + len(r.fake.Messages("C0OPS")); n != 0 {
		t.Fatalf("%d copies before the step", n)
	}
	r.clock.Advance(30 * time.Minute)
	r.waitFor("bob's DM copy and the ops copy", func() bool { return len(r.fake.Messages(dm)) == 1 && len(r.fake.Messages("C0OPS")) == 1 })
	r.waitFor("the thread notice", func() bool { return len(r.threadReplies(ask.TS, "<@"+bob+">")) == 1 })
	copyTS := r.fake.Messages(dm)[0].TS
	if _, err := r.fake.Person(bob).Select(r.ctx(), dm, copyTS, selectFinder(0), "no"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(r.ctx(), 5*time.Second)
	defer cancel()
	end, err := b.Wait(wctx, ask.ID)
	if err != nil || end.Status != interaction.StatusAnswered || end.AnsweredBy.ID != bob {
		t.Fatalf("bob's answer in his DM: %+v %v", end, err)
	}
	for _, at := range [][2]string{{chanID, ask.TS}, {dm, copyTS}, {"C0OPS", r.fake.Messages("C0OPS")[0].TS}} {
		r.waitFor("every copy drawn ended", func() bool {
			m, _ := r.fake.Message(at[0], at[1])
			return m.Updates > 0 && !strings.Contains(string(m.Blocks), `"actions"`)
		})
	}
}
