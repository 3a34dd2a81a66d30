package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store"
)

// startWith runs a Bot and a lifecycle configured by mod on the rig.
func (r *rig) startWith(mod func(*asks.Config)) *running {
	r.t.Helper()
	api := slack.New("xoxb-fake", slack.OptionAppLevelToken("xapp-fake"), slack.OptionAPIURL(r.fake.APIURL()))
	b, err := New(context.Background(), Config{API: api, Secrets: r.store, Clock: r.clock, Logger: zerolog.Nop()})
	if err != nil {
		r.t.Fatal(err)
	}
	cfg := asks.Config{Store: r.store, Surface: b, DefaultChannel: chanID, Clock: r.clock, Logger: zerolog.Nop()}
	mod(&cfg)
	svc, err := asks.New(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	run := &running{Service: svc, bot: b}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = runWith(ctx, b, svc)
	}()
	var once sync.Once
	r.t.Cleanup(func() { once.Do(func() { cancel(); <-done }) })
	r.waitFor("the bot connected", func() bool { return run.Ready(context.Background()) == nil })
	return run
}

func TestPostStoresThePermalink(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	want, err := b.bot.routes.single.GetPermalink(&slack.PermalinkParameters{Channel: chanID, Ts: ask.TS})
	if err != nil || want == "" {
		t.Fatalf("the fake's permalink: %q %v", want, err)
	}
	if ask.Permalink != want {
		t.Fatalf("permalink %q, want %q", ask.Permalink, want)
	}
	if n := r.fake.CallCount("chat.getPermalink"); n != 2 { // the lifecycle's one, and the test's
		t.Fatalf("%d chat.getPermalink calls", n)
	}
}

// A chat.postMessage that Slack applies but answers after the client gave
// up keeps its ask: the message is adopted, a retry with the key posts
// nothing, and clicks on the message answer the ask.
func TestSlowPostLeavesNoOrphan(t *testing.T) {
	r := newRig(t)
	b := r.startWith(func(c *asks.Config) { c.PostTimeout = 300 * time.Millisecond })
	r.fake.DelayNext("chat.postMessage", 1, 5*time.Second)
	in := interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("x")}}, IdempotencyKey: "slow"}
	ask, created, err := b.CreateIdempotent(r.ctx(), in)
	if err != nil || !created || ask.TS != "" || ask.Status != interaction.StatusPending {
		t.Fatalf("create: %+v %v %v", ask, created, err)
	}
	var got interaction.Ask
	r.waitFor("the message adopted", func() bool {
		got, _ = b.Get(context.Background(), ask.ID)
		return got.TS != ""
	})
	again, created, err := b.CreateIdempotent(r.ctx(), in)
	if err != nil || created || again.ID != ask.ID {
		t.Fatalf("retry: %+v %v %v", again, created, err)
	}
	if n := len(r.fake.Messages(chanID)); n != 1 {
		t.Fatalf("%d messages", n)
	}
	if _, err := r.fake.Person(alice).Select(r.ctx(), chanID, got.TS, selectFinder(0), "yes"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	end, err := b.Wait(wctx, ask.ID)
	if err != nil || end.Status != interaction.StatusAnswered {
		t.Fatalf("after the click: %+v %v", end, err)
	}
	if n := r.fake.CallCount("chat.postMessage"); n != 1 {
		t.Fatalf("%d chat.postMessage calls", n)
	}
}

// A definite refusal (ok:false) is not an unknown outcome: the ask is
// dropped, as before.
func TestRefusedPostIsNotUnknown(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	r.fake.FailNext("chat.postMessage", 1, slackfake.Failure{Error: "msg_too_long"})
	if _, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()}); interaction.ErrorCode(err) != interaction.SlackError {
		t.Fatalf("err = %v", err)
	}
	if list, _ := b.List(r.ctx(), interaction.ListFilter{}); len(list) != 0 {
		t.Fatalf("%d asks kept", len(list))
	}
}

// chat.update of a message Slack no longer has (message_not_found, or
// channel_not_found after a dev emulator restart) says so with
// asks.ErrMessageGone, so that the lifecycle stops retrying it; another
// failure does not.
func TestUpdateOfAGoneMessage(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	rec := store.Record{Ask: ask, Rev: 2}
	for _, tc := range []struct {
		fail string
		gone bool
	}{{"message_not_found", true}, {"channel_not_found", true}, {"ratelimited_no", false}} {
		r.fake.FailNext("chat.update", 1, slackfake.Failure{Error: tc.fail})
		if err := b.bot.Update(r.ctx(), rec); err == nil || errors.Is(err, asks.ErrMessageGone) != tc.gone {
			t.Errorf("%s: %v, gone %v", tc.fail, err, tc.gone)
		}
	}
	gone := rec
	gone.TS = "1700000000.999999"
	if err := b.bot.Update(r.ctx(), gone); !errors.Is(err, asks.ErrMessageGone) {
		t.Errorf("an unknown ts: %v", err)
	}
}

// FindPosted pages back through the conversation until the ask's creation:
// 250 messages posted after it while slackask was down do not hide it.
func TestFindPostedPagesBack(t *testing.T) {
	r := newRig(t)
	b := r.wire()
	ctx := r.ctx()
	rec := store.Record{Ask: interaction.Ask{ID: "apaged", Status: interaction.StatusPending, Questions: twoQuestions().Questions,
		Channel: chanID, CreatedAt: time.Now()}, Rev: 1}
	at, err := b.bot.Post(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		if _, _, err := b.bot.routes.single.PostMessageContext(ctx, chanID, slack.MsgOptionText(fmt.Sprintf("chatter %d", i), false)); err != nil {
			t.Fatal(err)
		}
	}
	found, err := b.bot.FindPosted(ctx, rec)
	if err != nil || found.TS != at.TS || found.Ref != at.Ref {
		t.Fatalf("FindPosted = %+v, %v; want %+v", found, err, at)
	}
	if n := r.fake.CallCount("conversations.history"); n != 2 {
		t.Fatalf("%d conversations.history calls, want 2 pages", n)
	}
	// An ask that was never posted is looked for back to its creation, and
	// not found.
	missing := rec
	missing.ID = "anever"
	if found, err := b.bot.FindPosted(ctx, missing); err != nil || found.Ref != "" {
		t.Fatalf("FindPosted of an unposted ask = %+v, %v", found, err)
	}
}

// A click on a message whose ask is gone tells the person and closes the
// message.
func TestClickOnUnknownAskClosesTheMessage(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.store.Delete(r.ctx(), ask.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.fake.Person(alice).Select(r.ctx(), chanID, ask.TS, selectFinder(0), "yes"); err != nil {
		t.Fatal(err)
	}
	r.waitFor("the person is told", r.ephemeralHas(alice, "no longer available"))
	r.waitFor("the message is closed", func() bool {
		m, _ := r.fake.Message(chanID, ask.TS)
		return !strings.Contains(string(m.Blocks), `"actions"`) && strings.Contains(string(m.Blocks), "no longer available")
	})
}

// A post that landed just before a crash, before its ts was stored, is
// adopted after the restart even when 250 messages came after it while
// slackask was down: recovery pages back, and posts nothing.
func TestRecoveryAdoptsAPostBehind250Messages(t *testing.T) {
	r := newRig(t)
	b := r.wire()
	ctx := r.ctx()
	rec := store.Record{Ask: interaction.Ask{ID: "aburied", Status: interaction.StatusPending, Questions: twoQuestions().Questions,
		Channel: chanID, CreatedAt: r.clock.Now().Add(-time.Minute)}, Rev: 1}
	if _, _, err := r.store.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	at, err := b.bot.Post(ctx, rec) // landed; the process died before storing its ts
	if err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		if _, _, err := b.bot.routes.single.PostMessageContext(ctx, chanID, slack.MsgOptionText(fmt.Sprintf("chatter %d", i), false)); err != nil {
			t.Fatal(err)
		}
	}
	run, _ := r.start()
	r.waitFor("the earlier post adopted", func() bool {
		got, _ := run.Get(context.Background(), rec.ID)
		return got.TS != ""
	})
	if got, _ := run.Get(ctx, rec.ID); got.TS != at.TS {
		t.Fatalf("ts %q, want the earlier post %q", got.TS, at.TS)
	}
	if n := r.fake.CallCount("chat.postMessage"); n != 251 {
		t.Fatalf("%d chat.postMessage calls, want 251 (no second post of the ask)", n)
	}
}
