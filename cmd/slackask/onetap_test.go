package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// One tap from a phone, end to end: asks made through the HTTP API,
// answered by fake people whose clicks reach slackask over Socket Mode.

// tap is who pressing the button labelled label in the ask's message.
func (h *harness) tap(ask interaction.Ask, who, label string) {
	h.t.Helper()
	if _, err := h.fake.Person(who).Click(ctxT(h.t), channel, ask.TS, optionButton(label)); err != nil {
		h.t.Fatal(err)
	}
}

// optionButton finds the button of an option by its text.
func optionButton(label string) slackfake.Finder {
	return func(_, actionID string, el map[string]any) bool {
		t, _ := el["text"].(map[string]any)
		return strings.Contains(actionID, ".select.") && t["text"] == label
	}
}

func approvalQuestion(opts ...interaction.Option) interaction.Question {
	return interaction.Question{ID: "deploy", Question: "Deploy v2.3 to production?", Options: opts, Required: true, AllowOther: new(bool)}
}

// A one-question approval is two buttons; one tap answers it.
func TestOneTapApproval(t *testing.T) {
	h := start(t)
	ask := h.create(ask1(approvalQuestion(interaction.Option{Label: "Approve", Style: "primary"}, interaction.Option{Label: "Reject"})))
	msg, _ := h.fake.Message(channel, ask.TS)
	for _, want := range []string{`"type":"button"`, `"style":"primary"`, `"text":"Approve"`} {
		if !strings.Contains(string(msg.Blocks), want) {
			t.Errorf("message lacks %s: %s", want, msg.Blocks)
		}
	}
	if strings.Contains(string(msg.Blocks), "static_select") || strings.Contains(string(msg.Blocks), ".submit") {
		t.Errorf("a one-tap approval has a menu or a Submit: %s", msg.Blocks)
	}
	before := h.fake.Person(alice).Taps()
	h.tap(ask, alice, "Approve")
	got := h.waitAsk(ask.ID)
	if mustJSON(t, got.Answer) != `{"answers":[{"id":"deploy","selected":["Approve"]}]}` || got.AnsweredBy.ID != alice {
		t.Fatalf("answer %s by %+v", mustJSON(t, got.Answer), got.AnsweredBy)
	}
	if n := h.fake.Person(alice).Taps() - before; n != 1 {
		t.Errorf("%d taps, want 1", n)
	}
	end := h.waitEnded(ask)
	if !strings.Contains(blocksText(end), "Approve") || !strings.Contains(blocksText(end), alice) {
		t.Errorf("ended message lacks who or what: %s", end.Blocks)
	}
}

// A 2-of-3 team approval: each tap is that person's response, confirmed
// to them; tapping another option replaces it; a veto tap ends the ask
// for everyone, as the message said before anyone tapped.
func TestTeamTapApproval(t *testing.T) {
	h := start(t)
	in := ask1(approvalQuestion(interaction.Option{Label: "Yes"}, interaction.Option{Label: "Hold"}, interaction.Option{Label: "No", Veto: true}))
	in.Responses, in.Responders = interaction.ResponseCount{N: 2}, []string{alice, bob, carol}
	ask := h.create(in)
	msg, _ := h.fake.Message(channel, ask.TS)
	if !strings.Contains(blocksText(msg), "*No* ends the vote for everyone") || !strings.Contains(string(msg.Blocks), `"style":"danger"`) {
		t.Errorf("the veto is not drawn danger and announced: %s", msg.Blocks)
	}
	if strings.Contains(string(msg.Blocks), ".submit") {
		t.Errorf("a team tap approval has a Submit: %s", msg.Blocks)
	}
	h.tap(ask, alice, "Yes")
	h.waitEphemeral(alice, "Your answer is in: 1 of 2")
	h.tap(ask, alice, "Hold") // a change of mind replaces her response
	// A tap is acked once journaled and stored right after: wait for it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got := h.get(ask.ID)
		if got.Status == interaction.StatusPending && len(got.Responses) == 1 &&
			mustJSON(t, got.Responses[0].Answer) == `{"answers":[{"id":"deploy","selected":["Hold"]}]}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after alice's second tap: %s %+v", got.Status, got.Responses)
		}
	}
	h.tap(ask, bob, "Hold")
	got := h.waitAsk(ask.ID)
	if got.Status != interaction.StatusAnswered || got.Tally["deploy"]["Hold"] != 2 || len(got.Responses) != 2 || got.AnsweredBy.ID != bob {
		t.Fatalf("ended %s tally %v responses %d by %+v", got.Status, got.Tally, len(got.Responses), got.AnsweredBy)
	}
	if n := h.fake.Person(bob).Taps(); n != 1 {
		t.Errorf("bob tapped %d times, want 1", n)
	}

	veto := h.create(in)
	h.tap(veto, alice, "Yes")
	h.tap(veto, carol, "No")
	got = h.waitAsk(veto.ID)
	if got.Status != interaction.StatusAnswered || mustJSON(t, got.Answer) != `{"answers":[{"id":"deploy","selected":["No"]}]}` || got.AnsweredBy.ID != carol {
		t.Fatalf("veto: %s %s by %+v", got.Status, mustJSON(t, got.Answer), got.AnsweredBy)
	}
	if end := h.waitEnded(veto); !strings.Contains(blocksText(end), "Vetoed (No) by <@"+carol+">") {
		t.Errorf("ended message: %s", end.Blocks)
	}
}

// A confirm option shows Slack's dialog: a click that skips it is refused
// by Slack (the fake), a denied dialog sends nothing, a confirmed one
// answers.
func TestConfirmOption(t *testing.T) {
	h := start(t)
	ask := h.create(ask1(approvalQuestion(
		interaction.Option{Label: "Deploy", Confirm: &interaction.Confirm{Title: "Deploy to production?", Confirm: "Deploy"}},
		interaction.Option{Label: "Wait"})))
	ctx := ctxT(t)
	p := h.fake.Person(alice)
	if _, err := p.ClickSkippingConfirm(ctx, channel, ask.TS, optionButton("Deploy")); !errors.Is(err, slackfake.ErrConfirmRequired) {
		t.Fatalf("a click that skipped the dialog: %v", err)
	}
	if err := p.ClickDenying(ctx, channel, ask.TS, optionButton("Deploy")); err != nil {
		t.Fatal(err)
	}
	if got := h.get(ask.ID); got.Status != interaction.StatusPending {
		t.Fatalf("denied dialog ended the ask: %s", got.Status)
	}
	h.tap(ask, alice, "Deploy")
	if got := h.waitAsk(ask.ID); mustJSON(t, got.Answer) != `{"answers":[{"id":"deploy","selected":["Deploy"]}]}` {
		t.Fatalf("answer %s", mustJSON(t, got.Answer))
	}
	seen := p.ConfirmsSeen()
	if len(seen) != 2 || seen[1].Title != "Deploy to production?" || seen[1].ConfirmText != "Deploy" || seen[1].DenyText != "Go back" {
		t.Fatalf("dialogs seen %+v", seen)
	}
}

// A required note: choosing Reject opens "Why?"; an empty reason is
// refused in the form; the reason given is in the answer, the resource's
// responses and the ended message.
func TestRequiredNote(t *testing.T) {
	h := start(t)
	ask := h.create(ask1(approvalQuestion(interaction.Option{Label: "Approve"}, interaction.Option{Label: "Reject", Note: interaction.NoteRequired})))
	ctx := ctxT(t)
	p := h.fake.Person(alice)
	h.tap(ask, alice, "Reject")
	view, err := p.WaitView(ctx)
	if err != nil || view.Title != "Why?" {
		t.Fatalf("view %+v %v", view, err)
	}
	var ve *slackfake.ViewErrors
	if _, err := p.Submit(ctx, view.ID); !errors.As(err, &ve) {
		t.Fatalf("an empty required note was sent: %v", err)
	}
	// Blank text passes the client's check; slackask refuses it in the form.
	if err := p.Type(ctx, view.ID, slackfake.ByActionID("text"), "   "); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(ctx, view.ID); !errors.As(err, &ve) || ve.Local || !strings.Contains(ve.Errors["custom"], "Say why") {
		t.Fatalf("a blank required note: %v", err)
	}
	if got := h.get(ask.ID); got.Status != interaction.StatusPending {
		t.Fatalf("ask ended without its note: %s", got.Status)
	}
	if err := p.Type(ctx, view.ID, slackfake.ByActionID("text"), "the migration is not reversible"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(ctx, view.ID); err != nil {
		t.Fatal(err)
	}
	got := h.waitAsk(ask.ID)
	if want := `{"answers":[{"id":"deploy","selected":["Reject"],"note":"the migration is not reversible"}]}`; mustJSON(t, got.Answer) != want {
		t.Fatalf("answer %s, want %s", mustJSON(t, got.Answer), want)
	}
	if end := h.waitEnded(ask); !strings.Contains(blocksText(end), "*Why:* the migration is not reversible") {
		t.Errorf("ended message lacks the note: %s", end.Blocks)
	}
}

// A team ask's note is in the person's response and in the team's answer.
func TestTeamNote(t *testing.T) {
	h := start(t)
	in := ask1(approvalQuestion(interaction.Option{Label: "Approve"}, interaction.Option{Label: "Reject", Note: interaction.NoteOptional, Veto: true}))
	in.Responses, in.Responders = interaction.ResponseCount{N: 2}, []string{alice, bob}
	ask := h.create(in)
	ctx := ctxT(t)
	h.tap(ask, bob, "Reject")
	view, err := h.fake.Person(bob).WaitView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.fake.Person(bob).Type(ctx, view.ID, slackfake.ByActionID("text"), "not on a Friday"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.Person(bob).Submit(ctx, view.ID); err != nil {
		t.Fatal(err)
	}
	got := h.waitAsk(ask.ID)
	if len(got.Responses) != 1 || got.Responses[0].Answer.Answers[0].Note != "not on a Friday" || got.Answer.Answers[0].Note != "not on a Friday" {
		t.Fatalf("responses %+v answer %+v", got.Responses, got.Answer)
	}
}

// A proposed default: "Use as is" answers with it in one tap; "Edit…"
// opens the form prefilled, and the answer is the text as submitted.
func TestDefaultUseAndEdit(t *testing.T) {
	h := start(t)
	const proposed = "fix(asks): the race in Wait"
	q := interaction.Question{ID: "msg", Question: "Commit message?", Default: proposed}
	ask := h.create(ask1(q))
	msg, _ := h.fake.Message(channel, ask.TS)
	if !strings.Contains(blocksText(msg), proposed) {
		t.Errorf("the message does not show the proposal: %s", msg.Blocks)
	}
	p := h.fake.Person(alice)
	before := p.Taps()
	if _, err := p.Click(ctxT(t), channel, ask.TS, control(0, "use")); err != nil {
		t.Fatal(err)
	}
	if got := h.waitAsk(ask.ID); got.Answer.Answers[0].Custom != proposed || p.Taps()-before != 1 {
		t.Fatalf("use as is: %+v, %d taps", got.Answer, p.Taps()-before)
	}

	ask = h.create(ask1(q))
	ctx := ctxT(t)
	if _, err := p.Click(ctx, channel, ask.TS, control(0, "other")); err != nil {
		t.Fatal(err)
	}
	view, err := p.WaitView(ctx)
	if err != nil || !strings.Contains(string(view.Blocks), `"initial_value":"`+proposed+`"`) {
		t.Fatalf("edit form not prefilled: %s %v", view.Blocks, err)
	}
	if err := p.Type(ctx, view.ID, slackfake.ByActionID("text"), proposed+" (#42)"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Submit(ctx, view.ID); err != nil {
		t.Fatal(err)
	}
	if got := h.waitAsk(ask.ID); got.Answer.Answers[0].Custom != proposed+" (#42)" {
		t.Fatalf("edited: %+v", got.Answer)
	}
}

// display buttons on a multi-select question draws checkboxes.
func TestCheckboxes(t *testing.T) {
	h := start(t)
	q := question("envs", "Deploy to which environments?", "dev", "staging", "prod")
	q.MultiSelect, q.Display = true, interaction.DisplayButtons
	ask := h.create(ask1(q, question("notes", "Anything else?")))
	ctx := ctxT(t)
	p := h.fake.Person(alice)
	if _, err := p.Select(ctx, channel, ask.TS, control(0, "select"), "dev", "prod"); err != nil {
		msg, _ := h.fake.Message(channel, ask.TS)
		t.Fatal(err, string(msg.Blocks))
	}
	if _, err := p.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	if got := h.waitAsk(ask.ID); mustJSON(t, got.Answer.Answers[0]) != `{"id":"envs","selected":["dev","prod"]}` {
		t.Fatalf("answer %s", mustJSON(t, got.Answer))
	}
}

// Over the button limits auto falls back to a menu, and buttons is
// refused with INVALID_QUESTION.
func TestButtonLimits(t *testing.T) {
	h := start(t)
	eight := question("pick", "Which one?", "a", "b", "c", "d", "e", "f", "g", "h")
	ask := h.create(ask1(eight))
	if msg, _ := h.fake.Message(channel, ask.TS); !strings.Contains(string(msg.Blocks), "static_select") {
		t.Errorf("8 options under auto are not a menu: %s", msg.Blocks)
	}
	var opts []string
	for i := range 26 {
		opts = append(opts, string(rune('a'+i)))
	}
	many := question("pick", "Which one?", opts...)
	many.Display = interaction.DisplayButtons
	var resp struct{ Error interaction.Error }
	if code := h.do("POST", "/v1/asks", ask1(many), &resp); code != 400 || resp.Error.Code != interaction.InvalidQuestion {
		t.Fatalf("26 buttons: %d %+v", code, resp)
	}
	long := question("pick", "Which one?", "a label much longer than thirty characters", "b")
	ask = h.create(ask1(long))
	if msg, _ := h.fake.Message(channel, ask.TS); !strings.Contains(string(msg.Blocks), "static_select") {
		t.Errorf("a long label under auto is not a menu: %s", msg.Blocks)
	}
}

// TestTapsToAnswer counts, with the fake person, the taps each kind of ask
// takes on a phone (see slackfake's Person.Taps for what counts); the
// README's "taps to answer" table reports them. Run with -v to see them.
func TestTapsToAnswer(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	taps := func(who string, do func(p *slackfake.Person)) int {
		t.Helper()
		p := h.fake.Person(who)
		before := p.Taps()
		do(p)
		return p.Taps() - before
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	form := func(p *slackfake.Person, ask interaction.Ask, q int, text string) {
		t.Helper()
		must(p.Click(ctx, channel, ask.TS, control(q, "other")))
		view, err := p.WaitView(ctx)
		must(nil, err)
		must(nil, p.Type(ctx, view.ID, slackfake.ByActionID("text"), text))
		must(p.Submit(ctx, view.ID))
	}
	yesNo := approvalQuestion(interaction.Option{Label: "Approve"}, interaction.Option{Label: "Reject"})

	ask := h.create(ask1(yesNo))
	approval := taps(alice, func(*slackfake.Person) { h.tap(ask, alice, "Approve") })
	h.waitAsk(ask.ID)

	team := ask1(approvalQuestion(interaction.Option{Label: "Approve"}, interaction.Option{Label: "Reject", Veto: true}))
	team.Responses, team.Responders = interaction.ResponseCount{N: 2}, []string{alice, bob, carol}
	ask = h.create(team)
	perPerson := []int{
		taps(alice, func(*slackfake.Person) { h.tap(ask, alice, "Approve") }),
		taps(bob, func(*slackfake.Person) { h.tap(ask, bob, "Approve") }),
	}
	h.waitAsk(ask.ID)

	confirmed := ask1(approvalQuestion(interaction.Option{Label: "Approve", Confirm: &interaction.Confirm{}}, interaction.Option{Label: "Reject"}))
	ask = h.create(confirmed)
	withConfirm := taps(alice, func(*slackfake.Person) { h.tap(ask, alice, "Approve") })
	h.waitAsk(ask.ID)

	reasoned := ask1(approvalQuestion(interaction.Option{Label: "Approve"}, interaction.Option{Label: "Reject", Note: interaction.NoteRequired}))
	ask = h.create(reasoned)
	reject := taps(alice, func(p *slackfake.Person) {
		h.tap(ask, alice, "Reject")
		view, err := p.WaitView(ctx)
		must(nil, err)
		must(nil, p.Type(ctx, view.ID, slackfake.ByActionID("text"), "the migration is not reversible"))
		must(p.Submit(ctx, view.ID))
	})
	if got := h.waitAsk(ask.ID); got.Answer.Answers[0].Note == "" {
		t.Fatalf("reject with a reason: %+v", got.Answer)
	}

	threeQuestions := func(display interaction.Display) interaction.AskInput {
		envs := question("envs", "Which environments?", "dev", "staging", "prod")
		envs.MultiSelect = true
		plan := question("plan", "Which plan?", "A", "B", "C")
		envs.Display, plan.Display = display, display
		return ask1(plan, envs, question("notes", "Anything else I should know?"))
	}
	formTaps := map[interaction.Display]int{}
	for _, d := range []interaction.Display{interaction.DisplayAuto, interaction.DisplayButtons} {
		ask = h.create(threeQuestions(d))
		formTaps[d] = taps(alice, func(p *slackfake.Person) {
			must(p.Select(ctx, channel, ask.TS, control(0, "select"), "B"))
			must(p.Select(ctx, channel, ask.TS, control(1, "select"), "dev", "prod"))
			form(p, ask, 2, "after the freeze")
			must(p.Click(ctx, channel, ask.TS, control(-1, "submit")))
		})
		h.waitAsk(ask.ID)
	}
	t.Logf("taps to answer: one-question approval %d; 2-of-3 team approval %v per person; approval with confirm %d; reject with a reason %d; 3-question form %d (display buttons: %d)",
		approval, perPerson, withConfirm, reject, formTaps[interaction.DisplayAuto], formTaps[interaction.DisplayButtons])
	if approval != 1 || perPerson[0] != 1 || perPerson[1] != 1 || withConfirm != 2 || reject != 3 {
		t.Errorf("taps: approval %d, team %v, confirm %d, reject %d; want 1, [1 1], 2, 3", approval, perPerson, withConfirm, reject)
	}
}

// Buttons in a form: a tap is a pick, which the re-rendered message marks
// (a button keeps no state), and Submit sends it.
func TestButtonsInAForm(t *testing.T) {
	h := start(t)
	plan := question("plan", "Which plan?", "A", "B", "C")
	plan.Display = interaction.DisplayButtons
	ask := h.create(ask1(plan, question("notes", "Anything else?")))
	h.tap(ask, alice, "B")
	h.waitMessage(ask, "marked the pick", func(m slackfake.Message) bool { return strings.Contains(string(m.Blocks), `"text":"✓ B"`) })
	if _, err := h.fake.Person(alice).Click(ctxT(t), channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	if got := h.waitAsk(ask.ID); mustJSON(t, got.Answer.Answers[0]) != `{"id":"plan","selected":["B"]}` {
		t.Fatalf("answer %s", mustJSON(t, got.Answer))
	}
}
