package bot

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/internal/slackfake"
)

// homeHas reports whether user's published Home shows every one of ids,
// in that order, under "Waiting on you", and none of absent.
func (r *rig) homeHas(user string, ids []string, absent ...string) func() bool {
	return func() bool {
		h, ok := r.fake.Home(user)
		if !ok {
			return false
		}
		s := string(h.Blocks)
		waiting, _, _ := strings.Cut(s, `"answered"`)
		at := 0
		for _, id := range ids {
			i := strings.Index(waiting[at:], `"waiting.`+id+`"`)
			if i < 0 {
				return false
			}
			at += i + 1
		}
		for _, id := range absent {
			if strings.Contains(waiting, `"waiting.`+id+`"`) {
				return false
			}
		}
		return true
	}
}

// Two people's Home tabs: each lists what waits for them, soonest
// deadline first, and is kept current; an answer given from the Home's
// form counts and moves the ask to "Recently answered" for one and off
// the other's list.
func TestHomeForTwoPeople(t *testing.T) {
	r := newRig(t)
	r.fake.AddUserGroup("S0TEAM", bob)
	b, _ := r.start()
	mk := func(responders []string, timeout time.Duration) interaction.Ask {
		t.Helper()
		a, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions(), Responders: responders, Timeout: interaction.Duration(timeout)})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	aliceOnly := mk([]string{alice}, time.Hour)
	bobOnly := mk([]string{bob}, 0)
	both := mk([]string{alice, bob}, 30*time.Minute)
	team := mk([]string{"S0TEAM"}, 2*time.Hour)
	open, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()}) // names nobody
	if err != nil {
		t.Fatal(err)
	}
	if err := r.fake.Person(alice).OpenHome(r.ctx()); err != nil {
		t.Fatal(err)
	}
	if err := r.fake.Person(bob).OpenHome(r.ctx()); err != nil {
		t.Fatal(err)
	}
	r.waitFor("alice's Home", r.homeHas(alice, []string{both.ID, aliceOnly.ID}, bobOnly.ID, team.ID, open.ID))
	r.waitFor("bob's Home", r.homeHas(bob, []string{both.ID, team.ID, bobOnly.ID}, aliceOnly.ID, open.ID))

	// Alice answers "both" from her Home: the whole ask as a form.
	p := r.fake.Person(alice)
	if _, err := p.ClickInHome(r.ctx(), slackfake.ByActionID("sa."+both.ID+".1.-1.answerform")); err != nil {
		t.Fatal(err)
	}
	view, err := p.WaitView(r.ctx())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(view.Blocks), "q1.pick") {
		t.Fatalf("the form does not hold every question: %s", view.Blocks)
	}
	if _, err := p.SelectInView(r.ctx(), view.ID, slackfake.ByBlockID("q0.pick"), "yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SelectInView(r.ctx(), view.ID, slackfake.ByBlockID("q1.pick"), "no"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(r.ctx(), view.ID); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(r.ctx(), 5*time.Second)
	defer cancel()
	end, err := b.Wait(wctx, both.ID)
	if err != nil || end.Status != interaction.StatusAnswered || end.AnsweredBy.ID != alice ||
		end.Answer.Answers[0].Selected[0] != "yes" || end.Answer.Answers[1].Selected[0] != "no" {
		t.Fatalf("the form's answer: %+v %v", end, err)
	}
	r.waitFor("the message is drawn ended", func() bool {
		m, _ := r.fake.Message(chanID, both.TS)
		return !strings.Contains(string(m.Blocks), `"actions"`)
	})
	r.waitFor("alice's Home moved it to answered", func() bool {
		h, _ := r.fake.Home(alice)
		return r.homeHas(alice, []string{aliceOnly.ID}, both.ID)() && strings.Contains(string(h.Blocks), `"answered.`+both.ID+`"`)
	})
	r.waitFor("bob's Home dropped it", r.homeHas(bob, []string{team.ID, bobOnly.ID}, both.ID))
	// A Home that did not change is not published again.
	calls := r.fake.CallCount("views.publish")
	if err := r.fake.Person(alice).OpenHome(r.ctx()); err != nil {
		t.Fatal(err)
	}
	r.sentinelHome(b, bob, bobOnly)
	if n := r.fake.CallCount("views.publish"); n != calls+1 {
		t.Fatalf("%d views.publish calls after an unchanged open and bob's change, want %d", n, calls+1)
	}
}

// sentinelHome changes ask a (withdrawn) and waits until user's Home
// drops it: every Home due before was looked at by then.
func (r *rig) sentinelHome(b *running, user string, a interaction.Ask) {
	r.t.Helper()
	if _, err := b.Withdraw(r.ctx(), a.ID); err != nil {
		r.t.Fatal(err)
	}
	r.waitFor("the sentinel leaves the Home", r.homeHas(user, nil, a.ID))
}

// A change that comes while a round draws a Home from an older read of
// the store keeps that person due: the round's view does not clear it.
func TestHomeMarkDuringARoundIsKept(t *testing.T) {
	h := newHomeBoard(&Bot{cfg: Config{Clock: clock.Real{}}})
	v := viewer{user: alice}
	h.opened(v)
	h.mu.Lock()
	snap := h.seq // the round reads the store here
	h.mu.Unlock()
	h.changed() // an ask changes meanwhile
	h.mu.Lock()
	h.doneLocked(v, snap) // the round published what it read
	due := h.dirty[v]
	h.doneLocked(v, h.seq) // a later round saw the change
	again := h.dirty[v]
	h.mu.Unlock()
	if !due || again {
		t.Fatalf("due after the older view: %v (want true); after the newer: %v (want false)", due, again)
	}
}
