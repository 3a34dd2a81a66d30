package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/dsh/dshtest"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

func TestOneQuestionOneTap(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	// POST ?wait holds the reply until the person taps.
	type result struct {
		ask  interaction.Ask
		code int
	}
	got := make(chan result, 1)
	go func() {
		var a interaction.Ask
		code := h.do("POST", "/v1/asks?wait=15s", ask1(question("deploy", "Deploy to prod?", "Yes", "No")), &a)
		got <- result{a, code}
	}()
	var msg slackfake.Message
	if err := h.fake.WaitFor(ctx, func() bool {
		ms := h.fake.Messages(channel)
		if len(ms) == 1 {
			msg = ms[0]
		}
		return len(ms) == 1
	}); err != nil {
		t.Fatal("no message posted")
	}
	if !strings.Contains(msg.Text, "Deploy to prod?") {
		t.Errorf("fallback text %q does not carry the question", msg.Text)
	}
	if _, err := h.fake.Person(alice).Select(ctx, channel, msg.TS, control(0, "select"), "Yes"); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.code != 201 || r.ask.Status != interaction.StatusAnswered {
		t.Fatalf("POST ?wait: %d %+v", r.code, r.ask)
	}
	if want := `{"answers":[{"id":"deploy","selected":["Yes"]}]}`; mustJSON(t, r.ask.Answer) != want {
		t.Fatalf("answer %s, want %s", mustJSON(t, r.ask.Answer), want)
	}
	if r.ask.AnsweredBy == nil || r.ask.AnsweredBy.ID != alice || r.ask.EndedAt == nil || r.ask.Error != nil {
		t.Fatalf("answeredBy/endedAt/error: %+v", r.ask)
	}
	end := h.waitEnded(r.ask)
	for _, want := range []string{"Yes", alice} {
		if !strings.Contains(string(end.Blocks), want) {
			t.Errorf("ended message lacks %q: %s", want, end.Blocks)
		}
	}
}

func TestBatchOfThree(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	multi := question("envs", "Which environments?", "dev", "staging", "prod")
	multi.MultiSelect = true
	ask := h.create(ask1(question("plan", "Which plan?", "A", "B", "C"), multi, question("notes", "Anything else I should know?")))
	p := h.fake.Person(alice)
	if _, err := p.Select(ctx, channel, ask.TS, control(0, "select"), "B"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Select(ctx, channel, ask.TS, control(1, "select"), "dev", "prod"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Click(ctx, channel, ask.TS, control(2, "other")); err != nil {
		t.Fatal(err)
	}
	view, err := p.WaitView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Type(ctx, view.ID, slackfake.ByActionID("text"), "Ship it <!channel> & go"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(ctx, view.ID); err != nil {
		t.Fatal(err)
	}
	// The message shows the typed text, and the selections survive the update.
	updated := h.waitMessage(ask, "showed the custom text", func(m slackfake.Message) bool {
		return strings.Contains(blocksText(m), "Ship it &lt;!channel&gt; &amp; go")
	})
	// The update re-renders every client: the selections made before it
	// are carried into the new message as initial options.
	for _, want := range []string{`"initial_option":{"text":{"text":"B"`, `"initial_options":[{"text":{"text":"dev"`} {
		if !strings.Contains(string(updated.Blocks), want) {
			t.Errorf("updated message lost a selection (%s): %s", want, updated.Blocks)
		}
	}
	if _, err := p.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	got := h.waitAsk(ask.ID)
	want := `{"answers":[{"id":"plan","selected":["B"]},{"id":"envs","selected":["dev","prod"]},{"id":"notes","selected":[],"custom":"Ship it <!channel> & go"}]}`
	if mustJSON(t, got.Answer) != want {
		t.Fatalf("answer\n got %s\nwant %s", mustJSON(t, got.Answer), want)
	}
	end := h.waitEnded(got)
	if strings.Contains(blocksText(end), "<!channel>") || !strings.Contains(blocksText(end), "Ship it &lt;!channel&gt;") {
		t.Fatalf("custom text not escaped in the ended message: %s", end.Blocks)
	}
}

func TestOtherReplacesSelection(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	ask := h.create(ask1(question("db", "Which database?", "SQLite", "Postgres"), question("n", "Name?")))
	p := h.fake.Person(alice)
	if _, err := p.Select(ctx, channel, ask.TS, control(0, "select"), "SQLite"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Click(ctx, channel, ask.TS, control(0, "other")); err != nil {
		t.Fatal(err)
	}
	view, err := p.WaitView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A blank answer is refused in the modal itself.
	if err := p.Type(ctx, view.ID, slackfake.ByActionID("text"), "   "); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(ctx, view.ID); err == nil {
		t.Fatal("blank custom text accepted")
	}
	if err := p.Type(ctx, view.ID, slackfake.ByActionID("text"), "CockroachDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(ctx, view.ID); err != nil {
		t.Fatal(err)
	}
	h.waitMessage(ask, "showed the custom text", func(m slackfake.Message) bool {
		return strings.Contains(string(m.Blocks), "CockroachDB")
	})
	if _, err := p.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	got := h.waitAsk(ask.ID)
	if want := `{"answers":[{"id":"db","selected":[],"custom":"CockroachDB"},{"id":"n","selected":[]}]}`; mustJSON(t, got.Answer) != want {
		t.Fatalf("answer %s, want %s", mustJSON(t, got.Answer), want)
	}
}

func TestSkip(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	ask := h.create(ask1(question("a", "First?", "x", "y"), question("b", "Second?", "x", "y")))
	p := h.fake.Person(alice)
	if _, err := p.Select(ctx, channel, ask.TS, control(0, "select"), "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Click(ctx, channel, ask.TS, control(0, "skip")); err != nil {
		t.Fatal(err)
	}
	h.waitMessage(ask, "showed the skip", func(m slackfake.Message) bool {
		return strings.Contains(string(m.Blocks), "Skipped")
	})
	if _, err := p.Select(ctx, channel, ask.TS, control(1, "select"), "y"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	got := h.waitAsk(ask.ID)
	if want := `{"answers":[{"id":"a","selected":[]},{"id":"b","selected":["y"]}]}`; mustJSON(t, got.Answer) != want {
		t.Fatalf("answer %s, want %s", mustJSON(t, got.Answer), want)
	}
	end := h.waitEnded(got)
	if !strings.Contains(strings.ToLower(string(end.Blocks)), "skipped") {
		t.Fatalf("ended message does not say skipped: %s", end.Blocks)
	}
}

func TestCancel(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	ask := h.create(ask1(question("a", "Go?", "yes", "no")))
	p := h.fake.Person(bob)
	if _, err := p.Click(ctx, channel, ask.TS, control(-1, "cancel")); err != nil {
		t.Fatal(err)
	}
	if len(p.ConfirmsSeen()) != 1 {
		t.Fatalf("cancel had no confirm dialog: %+v", p.ConfirmsSeen())
	}
	got := h.waitAsk(ask.ID)
	if got.Status != interaction.StatusCancelled || got.Error == nil || got.Error.Code != interaction.AskCancelled || got.Answer != nil || got.AnsweredBy != nil {
		t.Fatalf("cancelled ask: %+v", got)
	}
	end := h.waitEnded(got)
	if !strings.Contains(string(end.Blocks), "ancel") {
		t.Fatalf("message does not say cancelled: %s", end.Blocks)
	}
}

func TestCallerWithdraws(t *testing.T) {
	h := start(t)
	ask := h.create(ask1(question("a", "Go?", "yes", "no")))
	thaw, err := h.fake.Person(alice).Freeze(channel, ask.TS) // her phone has not refreshed
	if err != nil {
		t.Fatal(err)
	}
	defer thaw()
	var got interaction.Ask
	if code := h.do("DELETE", "/v1/asks/"+ask.ID, nil, &got); code != 200 {
		t.Fatalf("DELETE: %d", code)
	}
	if got.Status != interaction.StatusAborted || got.Error.Code != interaction.AskAborted {
		t.Fatalf("withdrawn ask: %+v", got)
	}
	h.waitEnded(got)
	// Idempotent: a second DELETE returns the same outcome.
	var again interaction.Ask
	if code := h.do("DELETE", "/v1/asks/"+ask.ID, nil, &again); code != 200 || again.Status != interaction.StatusAborted {
		t.Fatalf("second DELETE: %d %+v", code, again)
	}
	// A click from a client still showing the old message is refused.
	if _, err := h.fake.Person(alice).Click(ctxT(t), channel, ask.TS, control(-1, "cancel")); err != nil {
		t.Fatal(err)
	}
	h.waitEphemeral(alice, "withdrawn")
	if got := h.get(ask.ID); got.Status != interaction.StatusAborted || got.Answer != nil {
		t.Fatalf("a stale click changed the withdrawn ask: %+v", got)
	}
}

func TestExpiry(t *testing.T) {
	h := start(t)
	in := ask1(question("a", "Go?", "yes", "no"))
	in.Timeout = interaction.Duration(10 * time.Minute)
	ask := h.create(in)
	if ask.ExpiresAt == nil || !ask.ExpiresAt.Equal(h.clock.Now().Add(10*time.Minute)) {
		t.Fatalf("expiresAt %v", ask.ExpiresAt)
	}
	h.clock.Advance(9 * time.Minute)
	if got := h.get(ask.ID); got.Status != interaction.StatusPending {
		t.Fatalf("expired early: %+v", got)
	}
	h.clock.Advance(time.Minute)
	got := h.waitAsk(ask.ID)
	if got.Status != interaction.StatusExpired || got.Error.Code != interaction.AskTimeout || got.Answer != nil {
		t.Fatalf("expired ask: %+v", got)
	}
	end := h.waitEnded(got)
	if !strings.Contains(strings.ToLower(string(end.Blocks)), "expired") {
		t.Fatalf("message does not say expired: %s", end.Blocks)
	}
}

func TestLateClick(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	ask := h.create(ask1(question("a", "Go?", "yes", "no"), question("b", "Why?")))
	// Bob's client still shows the pending message; Alice submits first.
	thaw, err := h.fake.Person(bob).Freeze(channel, ask.TS)
	if err != nil {
		t.Fatal(err)
	}
	defer thaw()
	if _, err := h.fake.Person(alice).Select(ctx, channel, ask.TS, control(0, "select"), "yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.Person(alice).Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	first := h.waitAsk(ask.ID)
	h.waitEnded(first)
	if _, err := h.fake.Person(bob).Click(ctx, channel, ask.TS, control(-1, "cancel")); err != nil {
		t.Fatal(err)
	}
	h.waitEphemeral(bob, "already answered")
	if got := h.get(ask.ID); got.Status != interaction.StatusAnswered || mustJSON(t, got.Answer) != mustJSON(t, first.Answer) {
		t.Fatalf("late click changed the ask: %+v", got)
	}
}

func TestUnauthorizedClick(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	in := ask1(question("a", "Approve the production deploy?", "Approve", "Reject"))
	in.Responders = []string{"S0OPS"}
	ask := h.create(in)
	msg, _ := h.fake.Message(channel, ask.TS)
	if !strings.Contains(string(msg.Blocks), "S0OPS") {
		t.Errorf("message does not say who may answer: %s", msg.Blocks)
	}
	if _, err := h.fake.Person(bob).Select(ctx, channel, ask.TS, control(0, "select"), "Approve"); err != nil {
		t.Fatal(err)
	}
	h.waitEphemeral(bob, "can't answer")
	if _, err := h.fake.Person(bob).Click(ctx, channel, ask.TS, control(-1, "cancel")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.Person(bob).Click(ctx, channel, ask.TS, control(0, "other")); err != nil {
		t.Fatal(err)
	}
	// Each refusal is told to bob; the third is the "Other…" click's, sent
	// instead of opening the modal.
	if err := h.fake.WaitFor(ctx, func() bool { return len(h.fake.Ephemerals(bob)) == 3 }); err != nil {
		t.Fatalf("bob was told %d times, want 3 (select, cancel, other)", len(h.fake.Ephemerals(bob)))
	}
	if views := h.fake.OpenViews(bob); len(views) != 0 {
		t.Fatalf("a modal opened for someone who may not answer: %+v", views)
	}
	if got := h.get(ask.ID); got.Status != interaction.StatusPending {
		t.Fatalf("unauthorized person changed the ask: %+v", got)
	}
	// Carol is in the group.
	if _, err := h.fake.Person(carol).Select(ctx, channel, ask.TS, control(0, "select"), "Reject"); err != nil {
		t.Fatal(err)
	}
	got := h.waitAsk(ask.ID)
	if got.AnsweredBy.ID != carol || got.Answer.Answers[0].Selected[0] != "Reject" {
		t.Fatalf("answer: %+v", got)
	}
}

func TestTwoPeopleSubmitAtOnce(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	ask := h.create(ask1(question("a", "Which?", "x", "y"), question("b", "And?", "x", "y")))
	// Both have the pending message on screen: whoever's Submit lands
	// second still clicks it, though by then the message has been updated
	// to show the answer (without the freeze the loser's Click finds no
	// button and the test fails on a race it is not about).
	for _, who := range []string{alice, bob} {
		thaw, err := h.fake.Person(who).Freeze(channel, ask.TS)
		if err != nil {
			t.Fatal(err)
		}
		defer thaw()
	}
	var wg sync.WaitGroup
	for _, who := range []string{alice, bob} {
		wg.Go(func() {
			p := h.fake.Person(who)
			if _, err := p.Select(ctx, channel, ask.TS, control(0, "select"), map[string]string{alice: "x", bob: "y"}[who]); err != nil {
				t.Error(err)
			}
			if _, err := p.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := h.waitAsk(ask.ID)
	loser := bob
	if got.AnsweredBy.ID == bob {
		loser = alice
	}
	h.waitEphemeral(loser, "already answered")
	// Every click above was acked, and a click is acked only once its
	// change is stored (or refused): nothing more can change the ask.
	if again := h.get(ask.ID); mustJSON(t, again) != mustJSON(t, got) {
		t.Fatalf("the ask changed after it ended:\n%s\n%s", mustJSON(t, got), mustJSON(t, again))
	}
}

func TestRateLimitedPost(t *testing.T) {
	h := start(t)
	h.fake.FailNext("chat.postMessage", 1, slackfake.Failure{Status: 429, RetryAfter: time.Second})
	began := time.Now()
	ask := h.createQueued(ask1(question("a", "Go?", "yes", "no")))
	if waited := time.Since(began); waited < 900*time.Millisecond {
		t.Fatalf("Retry-After not honoured: posted after %v", waited)
	}
	if n := len(h.fake.Messages(channel)); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}
	if _, err := h.fake.Person(alice).Select(ctxT(t), channel, ask.TS, control(0, "select"), "yes"); err != nil {
		t.Fatal(err)
	}
	h.waitAsk(ask.ID)
}

func TestSlackRefusesPost(t *testing.T) {
	h := start(t)
	h.fake.FailNext("chat.postMessage", 1, slackfake.Failure{Error: "msg_too_long"})
	var body map[string]map[string]string
	code := h.do("POST", "/v1/asks", ask1(question("a", "Go?", "yes")), &body)
	if code != 502 || body["error"]["code"] != "SLACK_ERROR" || !strings.Contains(body["error"]["message"], "msg_too_long") {
		t.Fatalf("status %d body %v", code, body)
	}
}

// A channel, user or user group Slack does not know is the caller's
// mistake: 400 with Slack's error in the message, not 502, and no ask kept.
func TestUnknownConversationIs400(t *testing.T) {
	h := start(t)
	unknownChannel := ask1(question("a", "Go?", "yes"))
	unknownChannel.Channel = "C0NOWHERE"
	unknownUser := ask1(question("a", "Go?", "yes"))
	unknownUser.Channel, unknownUser.User = "", "U0NOBODY"
	unknownGroup := ask1(question("a", "Go?", "yes"))
	unknownGroup.Responders, unknownGroup.Responses = []string{"S0NOGROUP"}, interaction.ResponseCount{All: true}
	// A responder Slack does not know (users.info, the user-group list) is
	// named, rather than an ask nobody can answer (issue 29 item 1).
	unknownResponder := ask1(question("a", "Go?", "yes"))
	unknownResponder.Responders = []string{alice, "U01ALICE"}
	unknownResponderGroup := ask1(question("a", "Go?", "yes"))
	unknownResponderGroup.Responders = []string{alice, "S0NOGROUP"}
	unknownMention := ask1(question("a", "Go?", "yes"))
	unknownMention.Mention = []string{"U0GHOST"}
	for in, want := range map[*interaction.AskInput]string{
		&unknownChannel:        `channel "C0NOWHERE": Slack says channel_not_found`,
		&unknownUser:           `user "U0NOBODY": Slack says user_not_found`,
		&unknownGroup:          `user group "S0NOGROUP": Slack says no_such_subteam`,
		&unknownResponder:      `user "U01ALICE": Slack says user_not_found`,
		&unknownResponderGroup: `user group "S0NOGROUP": Slack says no_such_subteam`,
		&unknownMention:        `user "U0GHOST": Slack says user_not_found`,
	} {
		var body map[string]map[string]string
		code := h.do("POST", "/v1/asks", *in, &body)
		if code != 400 || body["error"]["code"] != "INVALID_QUESTION" || !strings.Contains(body["error"]["message"], want) {
			t.Errorf("status %d body %v, want 400 INVALID_QUESTION %q", code, body, want)
		}
	}
	var list map[string][]interaction.Ask
	if h.do("GET", "/v1/asks", nil, &list); len(list["asks"]) != 0 {
		t.Fatalf("%d asks kept", len(list["asks"]))
	}
	// Known people are asked about once, then cached.
	known := ask1(question("a", "Go?", "yes"))
	known.Responders = []string{carol}
	before := h.fake.CallCount("users.info")
	h.create(known)
	h.create(known)
	if n := h.fake.CallCount("users.info") - before; n != 1 {
		t.Errorf("%d users.info calls for two asks naming one person, want 1", n)
	}
	// A 404 says what is missing in the caller's terms, without the
	// store's internal prefix.
	var body map[string]map[string]string
	if code := h.do("GET", "/v1/asks/nope", nil, &body); code != 404 || body["error"]["code"] != "NOT_FOUND" || body["error"]["message"] != "no such ask" {
		t.Errorf("GET of an unknown ask: %d %v", code, body)
	}
}

func TestDisconnectMidAsk(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	ask := h.create(ask1(question("a", "Go?", "yes", "no")))
	h.fake.Disconnect("refresh_requested")
	if err := h.fake.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.Person(alice).Select(ctx, channel, ask.TS, control(0, "select"), "no"); err != nil {
		t.Fatal(err)
	}
	if got := h.waitAsk(ask.ID); got.Answer.Answers[0].Selected[0] != "no" {
		t.Fatalf("answer %+v", got.Answer)
	}
}

func TestHundredLongOptions(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	q := interaction.Question{ID: "pick", Question: "Pick one of many"}
	for i := range 100 {
		q.Options = append(q.Options, interaction.Option{Label: fmt.Sprintf("%03d %s", i, strings.Repeat("long label ", 19)[:196]),
			Description: strings.Repeat("d", 300)})
	}
	ask := h.create(ask1(q, question("more", "More?")))
	p := h.fake.Person(alice)
	if _, err := p.Select(ctx, channel, ask.TS, control(0, "select"), strconv.Itoa(99)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	got := h.waitAsk(ask.ID)
	if sel := got.Answer.Answers[0].Selected; len(sel) != 1 || sel[0] != q.Options[99].Label || len(sel[0]) != 200 {
		t.Fatalf("selected %q, want the whole 200-character label", sel)
	}
}

func TestDMAsk(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	in := ask1(question("a", "Lunch?", "yes", "no"))
	in.User = alice
	ask := h.create(in)
	if ask.Channel != slackfake.DMChannelID(alice) {
		t.Fatalf("DM ask in %s", ask.Channel)
	}
	// Only the recipient may answer: the message says so.
	msg, _ := h.fake.Message(ask.Channel, ask.TS)
	if !strings.Contains(string(msg.Blocks), alice) {
		t.Errorf("DM message does not name its recipient as the responder: %s", msg.Blocks)
	}
	if _, err := h.fake.Person(alice).Select(ctx, ask.Channel, ask.TS, control(0, "select"), "no"); err != nil {
		t.Fatal(err)
	}
	if got := h.waitAsk(ask.ID); got.AnsweredBy.ID != alice {
		t.Fatalf("%+v", got)
	}
}

func TestValidationErrorsOverHTTP(t *testing.T) {
	h := start(t)
	cases := []struct {
		name string
		body any
		code string
	}{
		{"empty", map[string]any{"questions": []any{}}, "EMPTY_QUESTIONS"},
		{"duplicate ids", ask1(question("a", "x"), question("a", "y")), "INVALID_QUESTION"},
		{"bad intent", map[string]any{"questions": []any{map[string]any{"id": "a", "question": "q", "detail": "plan", "options": []any{map[string]any{"label": "ok"}}, "intent": map[string]any{"kind": "plan-review", "approve": "nope"}}}}, "BAD_INTENT"},
		{"wrong type", map[string]any{"questions": "nope"}, "INVALID_QUESTION"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body map[string]map[string]string
			if code := h.do("POST", "/v1/asks", c.body, &body); code != 400 || body["error"]["code"] != c.code || body["error"]["name"] != "UserInteractionError" {
				t.Fatalf("status %d body %v", code, body)
			}
		})
	}
	if n := len(h.fake.Messages(channel)); n != 0 {
		t.Fatalf("%d messages posted for invalid requests", n)
	}
}

func TestDshQuestionAnsweredInSlack(t *testing.T) {
	host := dshtest.New()
	defer host.Close()
	h := start(t, withConfig(func(c *config.Config) { c.DshURL = host.URL }))
	ctx := ctxT(t)
	// A title is a live projection frame the host does not replay to a
	// client that connects later, so it is sent once the bridge listens.
	waitUntil(t, "the bridge's mux connection", 10*time.Second, func() bool { return host.Clients() == 1 })
	host.SetTitle("s1", "Refactor the parser")
	q1 := question("approach", "Which approach?", "Rewrite", "Patch")
	rpc1 := host.Ask("s1", []interaction.Question{q1})
	var first slackfake.Message
	if err := h.fake.WaitFor(ctx, func() bool {
		ms := h.fake.Messages(channel)
		if len(ms) > 0 {
			first = ms[0]
		}
		return len(ms) == 1
	}); err != nil {
		t.Fatal("the dsh question never reached Slack")
	}
	if !strings.Contains(string(first.Blocks), "Refactor the parser") {
		t.Errorf("session title not shown: %s", first.Blocks)
	}
	// A second question of the session goes into the first one's thread.
	rpc2 := host.Ask("s1", []interaction.Question{question("tests", "Add tests?", "Yes", "No")})
	var second slackfake.Message
	if err := h.fake.WaitFor(ctx, func() bool {
		for _, m := range h.fake.Messages(channel) {
			if m.ThreadTS == first.TS && strings.Contains(string(m.Blocks), "Add tests?") {
				second = m
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("second question not in the session thread: %+v", h.fake.Messages(channel))
	}
	p := h.fake.Person(alice)
	if _, err := p.Select(ctx, channel, first.TS, control(0, "select"), "Patch"); err != nil {
		t.Fatal(err)
	}
	res, err := host.Wait(ctx, rpc1)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ModelText; got != `{"answers":[{"id":"approach","selected":["Patch"]}]}` {
		t.Fatalf("the model would see %s", got)
	}
	// The turn is interrupted: the second ask ends as withdrawn.
	host.Interrupt("s1")
	h.waitMessage(interaction.Ask{Channel: channel, TS: second.TS}, "said the agent stopped waiting", func(m slackfake.Message) bool {
		return strings.Contains(string(m.Blocks), "stopped waiting")
	})
	if res, err := host.Wait(ctx, rpc2); err != nil || res.Via != "interrupt" || res.Answer != nil {
		t.Fatalf("the interrupted question: %+v %v", res, err)
	}
	if n := len(host.Responds()); n != 1 {
		t.Fatalf("%d responds to the host, want only the answer's", n)
	}
}

func TestMetrics(t *testing.T) {
	h := start(t)
	ask := h.create(ask1(question("a", "Go?", "yes", "no")))
	if _, err := h.fake.Person(alice).Select(ctxT(t), channel, ask.TS, control(0, "select"), "yes"); err != nil {
		t.Fatal(err)
	}
	h.waitAsk(ask.ID)
	resp, err := h.http.Get(h.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"slackask_asks_created_total 1", `slackask_asks_ended_total{status="answered"} 1`, "slackask_slack_posts_total 1", "slackask_corrupt_records_left_out_total 0", "slackask_ready 1", "go_goroutines"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestManifest(t *testing.T) {
	var out, errOut strings.Builder
	if code := run(t.Context(), []string{"manifest"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var m struct {
		Settings struct {
			SocketMode    bool `json:"socket_mode_enabled"`
			Interactivity struct {
				Enabled bool `json:"is_enabled"`
			} `json:"interactivity"`
		} `json:"settings"`
		OAuth struct {
			Scopes struct {
				Bot []string `json:"bot"`
			} `json:"scopes"`
		} `json:"oauth_config"`
	}
	if err := json.Unmarshal([]byte(out.String()), &m); err != nil {
		t.Fatal(err)
	}
	scopes := strings.Join(m.OAuth.Scopes.Bot, ",")
	if !m.Settings.SocketMode || !m.Settings.Interactivity.Enabled || !strings.Contains(scopes, "chat:write") || !strings.Contains(scopes, "im:write") {
		t.Fatalf("manifest %s", out.String())
	}
}

// The resource echoes where and to whom the ask was put: user (a DM),
// mention and responders, the server's default responders when the
// request named none (issue 29 item 14).
func TestResourceEchoesWhoMayAnswer(t *testing.T) {
	h := start(t)
	dm := ask1(question("a", "Go?", "yes"))
	dm.Channel, dm.User, dm.Mention = "", alice, []string{alice}
	got := h.create(dm)
	if got.User != alice || strings.Join(got.Mention, ",") != alice || h.get(got.ID).User != alice {
		t.Fatalf("DM ask: %s", mustJSON(t, got))
	}
	team := ask1(question("a", "Go?", "yes"))
	team.Responders = []string{alice, "S0OPS"}
	if got := h.get(h.create(team).ID); strings.Join(got.Responders, ",") != alice+",S0OPS" || got.User != "" {
		t.Fatalf("responders: %s", mustJSON(t, got))
	}
}
