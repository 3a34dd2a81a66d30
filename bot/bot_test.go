package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.uber.org/goleak"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/internal/journal"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	chanID = "C0TEST"
	alice  = "U0ALICE"
	bob    = "U0BOB"
)

type rig struct {
	t     *testing.T
	fake  *slackfake.Server
	store store.Store
	clock *clock.Fake
	conns int  // Socket Mode connections of the bots it starts (0: 1)
	relay bool // the bots it starts relay acks through the store (an AckRelay)
	// journal and replay: the bots it starts journal block_actions
	// envelopes (nil: none) and replay these entries at start.
	journal *journal.Journal
	replay  []journal.Entry
	// apiURL, when set, is the Web API URL of the bots it starts (a
	// proxy in front of the fake); askStore, when set, wraps the store
	// their lifecycle uses.
	apiURL   string
	askStore func(store.Store) store.Store
}

func newRig(t *testing.T) *rig {
	t.Helper()
	fake, err := slackfake.New(slackfake.Config{PingInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	fake.AddUser(alice, "alice")
	fake.AddUser(bob, "bob")
	fake.AddChannel(chanID, "test")
	return &rig{t: t, fake: fake, store: memory.New(), clock: clock.NewFake(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))}
}

// running is a lifecycle and its Slack adapter, as serve wires them.
type running struct {
	*asks.Service
	bot *Bot
}

func (r *running) Ready(ctx context.Context) error { return r.bot.Ready(ctx) }

// wire makes a Bot on the rig's fake and a lifecycle over the rig's store
// that shows its asks through it.
func (r *rig) wire() *running {
	r.t.Helper()
	api := slack.New("xoxb-fake", slack.OptionAppLevelToken("xapp-fake"), slack.OptionAPIURL(cmp.Or(r.apiURL, r.fake.APIURL())))
	cfg := Config{API: api, Secrets: r.store, Clock: r.clock, Logger: zerolog.Nop(), Connections: r.conns,
		Journal: r.journal, Replay: r.replay}
	if r.relay {
		cfg.Relay = r.store.(store.AckRelay)
	}
	b, err := New(context.Background(), cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	st := r.store
	if r.askStore != nil {
		st = r.askStore(st)
	}
	svc, err := asks.New(asks.Config{Store: st, Surface: b, DefaultChannel: chanID, Clock: r.clock, Logger: zerolog.Nop()})
	if err != nil {
		r.t.Fatal(err)
	}
	return &running{Service: svc, bot: b}
}

// start runs a Bot on the rig until the test ends or stop is called.
func (r *rig) start() (b *running, stop func()) {
	r.t.Helper()
	return r.startHooked(nil)
}

// startHooked is start, with before run on the wired bot before it runs.
func (r *rig) startHooked(before func(*running)) (b *running, stop func()) {
	r.t.Helper()
	b = r.wire()
	if before != nil {
		before(b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = runWith(ctx, b.bot, b.Service)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	r.t.Cleanup(stop)
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer wcancel()
	for b.Ready(wctx) != nil {
		if wctx.Err() != nil {
			r.t.Fatal("bot never connected")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return b, stop
}

// runWith runs b on svc as serve does: svc's background work starts with
// it and is closed once b.Run returned.
func runWith(ctx context.Context, b *Bot, svc *asks.Service) error {
	if err := svc.Start(ctx); err != nil {
		return err
	}
	defer svc.Close()
	return b.Run(ctx, svc)
}

func (r *rig) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	r.t.Cleanup(cancel)
	return ctx
}

func (r *rig) waitFor(what string, cond func() bool) {
	r.t.Helper()
	if err := r.fake.WaitFor(r.ctx(), cond); err != nil {
		r.t.Fatalf("never: %s", what)
	}
}

// ephemeralHas reports whether user was shown an ephemeral containing s.
func (r *rig) ephemeralHas(user, s string) func() bool {
	return func() bool {
		for _, e := range r.fake.Ephemerals(user) {
			if strings.Contains(e.Text, s) {
				return true
			}
		}
		return false
	}
}

func (r *rig) messageHas(ts, s string) func() bool {
	return func() bool {
		m, ok := r.fake.Message(chanID, ts)
		return ok && strings.Contains(string(m.Blocks), s)
	}
}

// sentinel has alice skip question q of ask (on its message) and waits
// until the skip is stored: every payload for the ask delivered before has
// been handled by then (one ask's payloads are handled in order).
func (r *rig) sentinel(ask interaction.Ask, q int) {
	r.t.Helper()
	if _, err := r.fake.Person(alice).Click(r.ctx(), ask.Channel, ask.TS, buttonFinder(q, "skip")); err != nil {
		r.t.Fatal(err)
	}
	r.waitFor("the sentinel skip is stored", func() bool {
		rec, _ := r.store.Get(context.Background(), ask.ID)
		return len(rec.Progress) > q && rec.Progress[q].Skipped
	})
}

func yesNo(id string) interaction.Question {
	return interaction.Question{ID: id, Question: "Go?", Options: []interaction.Option{{Label: "yes"}, {Label: "no"}}}
}

func twoQuestions() interaction.Request {
	return interaction.Request{Questions: []interaction.Question{yesNo("a"), yesNo("b")}}
}

func selectFinder(q int) slackfake.Finder {
	return func(blockID, actionID string, el map[string]any) bool {
		// a select menu, or the buttons of a question drawn as buttons
		return strings.HasSuffix(actionID, fmt.Sprintf(".%d.select", q)) || strings.Contains(actionID, fmt.Sprintf(".%d.select.", q))
	}
}

func buttonFinder(q int, kind string) slackfake.Finder {
	return func(blockID, actionID string, el map[string]any) bool {
		return el["type"] == "button" && strings.HasSuffix(actionID, fmt.Sprintf(".%d.%s", q, kind)) && strings.HasSuffix(blockID, ".controls")
	}
}

func TestProviderAskWithdrawnWhenContextEnds(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := b.Ask(ctx, twoQuestions())
		errc <- err
	}()
	r.waitFor("message posted", func() bool { return len(r.fake.Messages(chanID)) == 1 })
	cancel()
	err := <-errc
	if interaction.ErrorCode(err) != interaction.AskAborted {
		t.Fatalf("err = %v, want ASK_ABORTED", err)
	}
	ts := r.fake.Messages(chanID)[0].TS
	r.waitFor("message says withdrawn", r.messageHas(ts, "ithdrawn"))
}

func TestProviderAskAnswered(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	var svc interaction.Service
	if _, err := svc.Register(b); err != nil {
		t.Fatal(err)
	}
	type res struct {
		a   interaction.Answer
		err error
	}
	out := make(chan res, 1)
	go func() {
		a, err := svc.Ask(r.ctx(), interaction.Request{Questions: []interaction.Question{yesNo("go")}})
		out <- res{a, err}
	}()
	r.waitFor("message posted", func() bool { return len(r.fake.Messages(chanID)) == 1 })
	ts := r.fake.Messages(chanID)[0].TS
	if _, err := r.fake.Person(alice).Select(r.ctx(), chanID, ts, selectFinder(0), "no"); err != nil {
		t.Fatal(err)
	}
	got := <-out
	if got.err != nil || got.a.Answers[0].Selected[0] != "no" {
		t.Fatalf("%+v %v", got.a, got.err)
	}
}

func TestForgedViewMetadataIsRefused(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	for name, meta := range map[string]string{
		"no signature":     "v1:" + ask.ID + ":0:" + alice,
		"bad signature":    "v1:" + ask.ID + ":0:" + alice + ":AAAA",
		"other user's":     b.bot.signMeta(viewMeta{askID: ask.ID, q: 0, user: bob}),
		"garbage":          "{}",
		"signed elsewhere": signWith([]byte("another key"), viewMeta{askID: ask.ID, q: 0, user: alice}),
	} {
		t.Run(name, func(t *testing.T) {
			payload := map[string]any{
				"type": "view_submission", "user": map[string]any{"id": alice}, "team": map[string]any{"id": "T0FAKE"},
				"view": map[string]any{"id": "V1", "callback_id": "slackask_other", "private_metadata": meta,
					"state": map[string]any{"values": map[string]any{"custom": map[string]any{"text": map[string]any{"type": "plain_text_input", "value": "forged"}}}}},
			}
			ack, err := r.fake.Person(alice).Raw(r.ctx(), payload)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(ack), "errors") {
				t.Fatalf("ack %s: want response_action errors", ack)
			}
		})
	}
	r.sentinel(ask, 1)
	rec, _ := r.store.Get(r.ctx(), ask.ID)
	for _, p := range rec.Progress {
		if p.Custom != "" {
			t.Fatalf("forged view changed progress: %+v", rec.Progress)
		}
	}
}

func signWith(key []byte, m viewMeta) string {
	b := &Bot{metaKey: key}
	return b.signMeta(m)
}

func TestPayloadFromAnotherMessageIsIgnored(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	for name, container := range map[string]map[string]any{
		"other channel": {"type": "message", "channel_id": "C0OTHER", "message_ts": ask.TS},
		"other message": {"type": "message", "channel_id": chanID, "message_ts": "1.000001"},
	} {
		t.Run(name, func(t *testing.T) {
			payload := map[string]any{
				"type": "block_actions", "user": map[string]any{"id": alice}, "team": map[string]any{"id": "T0FAKE"},
				"api_app_id": "A0FAKE", "container": container,
				"actions": []map[string]any{{"type": "button", "action_id": "sa." + ask.ID + ".1.-1.cancel", "block_id": "sa." + ask.ID + ".1.-1.controls"}},
			}
			if _, err := r.fake.Person(alice).Raw(r.ctx(), payload); err != nil {
				t.Fatal(err)
			}
		})
	}
	r.sentinel(ask, 1)
	if got, _ := b.Get(r.ctx(), ask.ID); got.Status != interaction.StatusPending {
		t.Fatalf("a payload from another message ended the ask: %+v", got)
	}
}

func TestReminderOnce(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	in := interaction.AskInput{Request: twoQuestions(), Responders: []string{alice}, RemindAfter: interaction.Duration(time.Hour)}
	ask, err := b.Create(r.ctx(), in)
	if err != nil {
		t.Fatal(err)
	}
	// Sentinels: asks whose reminders fall due at the instants checked.
	early, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions(), RemindAfter: interaction.Duration(59 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	reminders := func(of interaction.Ask) int {
		n := 0
		for _, m := range r.fake.Messages(chanID) {
			if m.ThreadTS == of.TS && strings.Contains(m.Text, "Reminder") {
				n++
			}
		}
		return n
	}
	r.clock.Advance(59 * time.Minute)
	r.waitFor("the sentinel's reminder", func() bool { return reminders(early) == 1 })
	if n := reminders(ask); n != 0 {
		t.Fatalf("reminder came early: %d", n)
	}
	r.clock.Advance(time.Minute)
	r.waitFor("reminder in the thread", func() bool {
		for _, m := range r.fake.Messages(chanID) {
			if m.ThreadTS == ask.TS && strings.Contains(m.Text, "<@"+alice+">") && strings.Contains(m.Text, "Reminder") {
				return true
			}
		}
		return false
	})
	late, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions(), RemindAfter: interaction.Duration(3 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(3 * time.Hour)
	r.waitFor("the second sentinel's reminder", func() bool { return reminders(late) == 1 })
	if n := reminders(ask); n != 1 {
		t.Fatalf("%d reminders, want one", n)
	}
}

func TestRestartRecovers(t *testing.T) {
	r := newRig(t)
	b1, stop1 := r.start()
	short := interaction.AskInput{Request: twoQuestions(), Timeout: interaction.Duration(10 * time.Minute)}
	expiring, err := b1.Create(r.ctx(), short)
	if err != nil {
		t.Fatal(err)
	}
	open, err := b1.Create(r.ctx(), interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("x")}},
		Responders: []string{alice}, RemindAfter: interaction.Duration(2 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	// An ask that ended but whose final update never reached Slack.
	ended, err := b1.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	stop1()
	if _, err := r.store.Update(r.ctx(), ended.ID, func(rec *store.Record) error {
		now := r.clock.Now()
		rec.Status, rec.EndedAt, rec.Rev, rec.Synced = interaction.StatusCancelled, &now, rec.Rev+1, false
		rec.Error = interaction.Errorf(interaction.AskCancelled, "cancelled")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Hour) // the deadline passes while the service is down

	b2, _ := r.start()
	r.waitFor("expired ask's message updated", r.messageHas(expiring.TS, "xpired"))
	if got, _ := b2.Get(r.ctx(), expiring.ID); got.Status != interaction.StatusExpired {
		t.Fatalf("status %s, want expired", got.Status)
	}
	r.waitFor("unsynced ended ask's message updated", func() bool {
		m, _ := r.fake.Message(chanID, ended.TS)
		return !strings.Contains(string(m.Blocks), `"actions"`)
	})
	// The reminder, due by a stored time, fires after the restart.
	r.clock.Advance(time.Hour)
	r.waitFor("reminder after the restart", func() bool {
		for _, m := range r.fake.Messages(chanID) {
			if m.ThreadTS == open.TS && strings.Contains(m.Text, "Reminder") {
				return true
			}
		}
		return false
	})
	// The message posted before the restart still answers, the first time.
	if _, err := r.fake.Person(alice).Select(r.ctx(), chanID, open.TS, selectFinder(0), "yes"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := b2.Wait(wctx, open.ID)
	if err != nil || got.Status != interaction.StatusAnswered || got.Answer.Answers[0].Selected[0] != "yes" {
		t.Fatalf("answer after restart: %+v %v", got, err)
	}
}

func TestRecoverPostsAcceptedButUnpostedAsk(t *testing.T) {
	r := newRig(t)
	// A record stored by a process that died before chat.postMessage.
	past := r.clock.Now().Add(-time.Minute)
	rec := store.Record{Ask: interaction.Ask{ID: "aunposted", Status: interaction.StatusPending, Questions: twoQuestions().Questions,
		Channel: chanID, CreatedAt: past}, Rev: 1, IdempotencyKey: "k1"}
	if _, _, err := r.store.Create(r.ctx(), rec); err != nil {
		t.Fatal(err)
	}
	b, _ := r.start()
	r.waitFor("the ask is posted and its ts stored", func() bool {
		got, _ := b.Get(r.ctx(), "aunposted")
		return len(r.fake.Messages(chanID)) == 1 && got.TS != ""
	})
	// A retried POST with the same key returns it without a second message.
	again, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "k1"})
	if err != nil || again.ID != "aunposted" || len(r.fake.Messages(chanID)) != 1 {
		t.Fatalf("idempotent create: %+v %v, %d messages", again, err, len(r.fake.Messages(chanID)))
	}
}

func TestKeyedQueueOrder(t *testing.T) {
	var q keyedQueue
	var mu sync.Mutex
	got := map[string][]int{}
	for i := range 200 {
		key := fmt.Sprint(i % 3)
		q.submit(key, func() {
			mu.Lock()
			got[key] = append(got[key], i)
			mu.Unlock()
		})
	}
	q.wait()
	for key, seq := range got {
		for j := 1; j < len(seq); j++ {
			if seq[j] < seq[j-1] {
				t.Fatalf("key %s ran out of order: %v", key, seq)
			}
		}
	}
}

func TestSlackErrMessage(t *testing.T) {
	err := slackErr(slack.SlackErrorResponse{Err: "invalid_blocks", ResponseMetadata: slack.ResponseMetadata{Messages: []string{"[ERROR] too long"}}})
	var ie *interaction.Error
	if !errors.As(err, &ie) || ie.Code != interaction.SlackError || !strings.Contains(ie.Message, "invalid_blocks") || !strings.Contains(ie.Message, "too long") {
		t.Fatalf("%v", err)
	}
}

func TestGroupMembersCachedAndRefreshed(t *testing.T) {
	r := newRig(t)
	r.fake.AddUserGroup("S0TEAM", alice)
	b, _ := r.start()
	for range 3 {
		if ok, err := b.bot.InGroup(r.ctx(), "", "S0TEAM", alice); !ok || err != nil {
			t.Fatalf("alice refused: %v", err)
		}
	}
	if n := r.fake.CallCount("usergroups.users.list"); n != 1 {
		t.Fatalf("%d usergroups.users.list calls, want 1 (cached)", n)
	}
	r.fake.AddUserGroup("S0TEAM", bob) // the group changes in Slack
	if ok, _ := b.bot.InGroup(r.ctx(), "", "S0TEAM", bob); ok {
		t.Fatal("cache ignored: bob allowed before the refresh")
	}
	r.clock.Advance(6 * time.Minute)
	if ok, err := b.bot.InGroup(r.ctx(), "", "S0TEAM", bob); !ok || err != nil {
		t.Fatalf("bob refused after the refresh: %v", err)
	}
}

func TestDMAskRefusesOthers(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions(), User: alice})
	if err != nil {
		t.Fatal(err)
	}
	payload := map[string]any{
		"type": "block_actions", "user": map[string]any{"id": bob}, "team": map[string]any{"id": "T0FAKE"},
		"container": map[string]any{"type": "message", "channel_id": ask.Channel, "message_ts": ask.TS},
		"actions":   []map[string]any{{"type": "button", "action_id": "sa." + ask.ID + ".1.-1.cancel", "block_id": "sa." + ask.ID + ".1.-1.controls"}},
	}
	if _, err := r.fake.Person(bob).Raw(r.ctx(), payload); err != nil {
		t.Fatal(err)
	}
	r.sentinel(ask, 1)
	if got, _ := b.Get(r.ctx(), ask.ID); got.Status != interaction.StatusPending {
		t.Fatalf("bob ended alice's DM ask: %+v", got)
	}
}

func TestWithdrawnWhilePostingStillUpdatesMessage(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	// Slack is slow to accept the post: withdraw the ask meanwhile.
	r.fake.DelayNext("chat.postMessage", 1, time.Second)
	var ask interaction.Ask
	done := make(chan error, 1)
	go func() {
		var err error
		ask, err = b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions(), IdempotencyKey: "slow"})
		done <- err
	}()
	var id string
	r.waitFor("record stored", func() bool {
		recs, _ := r.store.Pending(r.ctx())
		if len(recs) == 1 {
			id = recs[0].ID
		}
		return id != ""
	})
	if _, err := b.Withdraw(r.ctx(), id); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.waitFor("the late-posted message shows the withdrawal", r.messageHas(ask.TS, "ithdrawn"))
}

// Submit with nothing chosen tells the person so and leaves the ask
// pending (issue 16.8).
func TestSubmitWithNothingChosenTellsThePerson(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.fake.Person(alice).Click(r.ctx(), chanID, ask.TS, buttonFinder(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	r.waitFor("told nothing is chosen", r.ephemeralHas(alice, "Nothing chosen yet"))
	if got, _ := b.Get(r.ctx(), ask.ID); got.Status != interaction.StatusPending {
		t.Fatalf("a Submit with nothing chosen ended the ask: %+v", got)
	}
}

// A post Slack rate-limits is not a failed create: the ask comes back
// pending and queued (no ts), and is posted once the channel's turn comes
// (issue 29 item 0).
func TestRateLimitedPostIsQueuedNotFailed(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	r.fake.FailNext("chat.postMessage", 1, slackfake.Failure{Status: 429, RetryAfter: time.Second})
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatalf("create on a rate-limited channel: %v", err)
	}
	if ask.Status != interaction.StatusPending || ask.TS != "" || ask.Posting != interaction.PostingQueued || ask.QueuePlace != 1 {
		t.Fatalf("created %+v, want pending, queued at place 1, no ts", ask)
	}
	var posted interaction.Ask
	ctx := r.ctx()
	for posted.TS == "" {
		if ctx.Err() != nil {
			t.Fatal("never posted")
		}
		r.clock.Advance(100 * time.Millisecond) // the lifecycle's clock; Retry-After runs in real time
		time.Sleep(20 * time.Millisecond)
		posted, _ = b.Get(ctx, ask.ID)
	}
	if posted.Posting != "" || posted.QueuePlace != 0 {
		t.Fatalf("posted ask still says %q at %d", posted.Posting, posted.QueuePlace)
	}
	if n := len(r.fake.Messages(chanID)); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
}

// notify "dm": each responder gets the ask in a DM with its own controls;
// an answer in one DM ends the ask, and the channel message and every DM
// are drawn ended (issue 28).
func TestNotifyDMCopiesAnsweredInADM(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions(), Responders: []string{alice, bob}, Notify: interaction.NotifyDM})
	if err != nil {
		t.Fatal(err)
	}
	var rec asks.Record
	r.waitFor("a DM each", func() bool {
		rec, _ = r.store.Get(r.ctx(), ask.ID)
		return len(rec.Copies) == 2 && rec.Copies[0].Ref != "" && rec.Copies[1].Ref != ""
	})
	dm := map[string][2]string{}
	for _, c := range rec.Copies {
		ch, ts, err := splitRef(c.Ref)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.fake.Message(ch, ts); !ok || ch == chanID {
			t.Fatalf("copy for %s: no message at %s", c.For, c.Ref)
		}
		dm[c.For] = [2]string{ch, ts}
	}
	p := r.fake.Person(bob)
	at := dm[bob]
	if _, err := p.Select(r.ctx(), at[0], at[1], selectFinder(0), "yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Select(r.ctx(), at[0], at[1], selectFinder(1), "no"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Click(r.ctx(), at[0], at[1], buttonFinder(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	ended, err := b.Wait(r.ctx(), ask.ID)
	if err != nil || ended.Status != interaction.StatusAnswered || ended.AnsweredBy.ID != bob {
		t.Fatalf("after bob's answer in his DM: %+v (%v)", ended, err)
	}
	drawnEnded := func(ch, ts string) func() bool {
		return func() bool {
			m, ok := r.fake.Message(ch, ts)
			return ok && !strings.Contains(string(m.Blocks), `"type":"actions"`)
		}
	}
	r.waitFor("the channel message drawn ended", drawnEnded(chanID, ask.TS))
	for who, at := range dm {
		r.waitFor(who+"'s DM drawn ended", drawnEnded(at[0], at[1]))
	}
}
