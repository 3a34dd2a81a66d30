package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// deployApproval is "Deploy v1.4.2?" Yes/No with No a veto, collecting n
// responses from who, drawn as a menu (pick, then Submit; onetap_test.go
// has the same drawn as buttons).
func deployApproval(n interaction.ResponseCount, who ...string) interaction.AskInput {
	in := ask1(interaction.Question{ID: "deploy", Question: "Deploy v1.4.2?", Display: interaction.DisplayMenu,
		Options: []interaction.Option{{Label: "Yes"}, {Label: "No", Veto: true}}})
	in.Responses, in.Responders = n, who
	return in
}

// answer is who picking label on question q and pressing Submit.
func (h *harness) answer(ask interaction.Ask, who string, picks map[int]string) {
	h.t.Helper()
	ctx := ctxT(h.t)
	p := h.fake.Person(who)
	for q, label := range picks {
		if _, err := p.Select(ctx, channel, ask.TS, control(q, "select"), label); err != nil {
			h.t.Fatal(err)
		}
	}
	if _, err := p.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
		h.t.Fatal(err)
	}
}

// noPicksShown fails when any message the service posted or updated
// carries a selection as an initial option or anyone's progress line: on
// a team ask the message is everyone's, and picks are each person's own.
func noPicksShown(t testing.TB, fake *slackfake.Server) {
	t.Helper()
	n := 0
	for _, c := range fake.Calls() {
		if c.Method != "chat.update" && c.Method != "chat.postMessage" {
			continue
		}
		n++
		for _, bad := range []string{"initial_option", ".progress", "Skipped"} {
			if strings.Contains(c.Params["blocks"], bad) {
				t.Errorf("%s carried %q: %s", c.Method, bad, c.Params["blocks"])
			}
		}
	}
	if n == 0 {
		t.Error("no message posted or updated")
	}
}

// 2 of 3 approve: each Submit is confirmed to its person, the message
// says who answered (not what), the second one ends the ask with the
// team's answer and tally, a third person is told it ended. Then a veto
// ends another ask at once.
func TestTeamTwoOfThreeThenVeto(t *testing.T) {
	h := start(t)
	ask := h.create(deployApproval(interaction.ResponseCount{N: 2}, alice, bob, carol))
	if ask.Wanted != 2 {
		t.Fatalf("responsesWanted %d", ask.Wanted)
	}
	h.answer(ask, alice, map[int]string{0: "Yes"})
	h.waitEphemeral(alice, "Your answer is in: 1 of 2")
	h.waitMessage(ask, "showed alice answered", func(m slackfake.Message) bool {
		return strings.Contains(blocksText(m), "1 of 2 answered: <@U0ALICE>")
	})
	if got := h.get(ask.ID); got.Status != interaction.StatusPending || len(got.Responses) != 1 || got.Responses[0].User.ID != alice {
		t.Fatalf("after alice: %s", mustJSON(t, got))
	}
	// Carol's client will still show the controls after the end.
	thaw, err := h.fake.Person(carol).Freeze(channel, ask.TS)
	if err != nil {
		t.Fatal(err)
	}
	defer thaw()
	h.answer(ask, bob, map[int]string{0: "Yes"})
	got := h.waitAsk(ask.ID)
	if got.Status != interaction.StatusAnswered || got.AnsweredBy.ID != bob || mustJSON(t, got.Answer) != `{"answers":[{"id":"deploy","selected":["Yes"]}]}` ||
		got.Tally["deploy"]["Yes"] != 2 || len(got.Responses) != 2 {
		t.Fatalf("ended: %s", mustJSON(t, got))
	}
	end := h.waitEnded(got)
	if s := blocksText(end); !strings.Contains(s, "Tally: Yes: 2") || !strings.Contains(s, "<@U0BOB>") {
		t.Fatalf("ended message: %s", s)
	}
	h.waitEphemeral(bob, "the question is answered")
	h.answer(ask, carol, map[int]string{0: "No"})
	h.waitEphemeral(carol, "already ended")
	if again := h.get(ask.ID); mustJSON(t, again) != mustJSON(t, got) {
		t.Fatalf("a late submit changed the ask:\n%s\n%s", mustJSON(t, got), mustJSON(t, again))
	}

	veto := h.create(deployApproval(interaction.ResponseCount{N: 3}, alice, bob, carol))
	h.answer(veto, alice, map[int]string{0: "Yes"})
	h.waitEphemeral(alice, "Your answer is in: 1 of 3")
	h.answer(veto, carol, map[int]string{0: "No"})
	got = h.waitAsk(veto.ID)
	if got.Status != interaction.StatusAnswered || got.AnsweredBy.ID != carol || got.Answer.Answers[0].Selected[0] != "No" ||
		got.Tally["deploy"]["Yes"] != 1 || got.Tally["deploy"]["No"] != 1 {
		t.Fatalf("vetoed: %s", mustJSON(t, got))
	}
	// The resource says who vetoed and with what, and echoes who may answer.
	if got.VetoedBy == nil || got.VetoedBy.ID != carol || mustJSON(t, got.VetoedWith) != `{"question":"deploy","label":"No"}` ||
		strings.Join(got.Responders, ",") != strings.Join([]string{alice, bob, carol}, ",") {
		t.Fatalf("vetoedBy/vetoedWith/responders: %s", mustJSON(t, got))
	}
	if ask.VetoedBy != nil || h.get(ask.ID).VetoedBy != nil {
		t.Fatalf("vetoedBy on an ask no veto ended")
	}
	if s := blocksText(h.waitEnded(got)); !strings.Contains(s, "Vetoed (No) by <@U0CAROL>") {
		t.Fatalf("vetoed message: %s", s)
	}
	noPicksShown(t, h.fake)
}

// "all" waits for every member of the responder groups as they were when
// the ask was created; more than 50 people, 0 and "all" without
// responders are refused.
func TestTeamAllWithUserGroup(t *testing.T) {
	h := start(t)
	ask := h.create(deployApproval(interaction.ResponseCount{All: true}, "S0OPS", bob))
	if ask.Wanted != 3 {
		t.Fatalf("responsesWanted %d, want alice, carol (S0OPS) and bob", ask.Wanted)
	}
	for i, who := range []string{carol, bob} {
		h.answer(ask, who, map[int]string{0: "Yes"})
		h.waitEphemeral(who, fmt.Sprintf("Your answer is in: %d of 3", i+1))
	}
	if got := h.get(ask.ID); got.Status != interaction.StatusPending {
		t.Fatalf("ended before alice answered: %s", got.Status)
	}
	h.answer(ask, alice, map[int]string{0: "Yes"})
	if got := h.waitAsk(ask.ID); got.Status != interaction.StatusAnswered || got.AnsweredBy.ID != alice || len(got.Responses) != 3 {
		t.Fatalf("ended: %s", mustJSON(t, got))
	}
	var big []string
	for i := range 51 {
		big = append(big, fmt.Sprintf("U0P%03d", i))
	}
	h.fake.AddUserGroup("S0BIG", big...)
	for name, body := range map[string]any{
		"51 people":       deployApproval(interaction.ResponseCount{All: true}, "S0BIG"),
		"zero":            map[string]any{"questions": []any{map[string]any{"id": "a", "question": "Go?"}}, "responses": 0},
		"all, no one":     map[string]any{"questions": []any{map[string]any{"id": "a", "question": "Go?"}}, "responses": "all"},
		"negative":        map[string]any{"questions": []any{map[string]any{"id": "a", "question": "Go?"}}, "responses": -2},
		"unknown timeout": map[string]any{"questions": []any{map[string]any{"id": "a", "question": "Go?"}}, "onTimeout": "later"},
	} {
		var e map[string]map[string]string
		if code := h.do("POST", "/v1/asks", body, &e); code != 400 || e["error"]["code"] != string(interaction.InvalidQuestion) {
			t.Errorf("%s: %d %v", name, code, e)
		}
	}
	noPicksShown(t, h.fake)
}

// At the deadline "expire" keeps the partial responses on the expired
// ask; "answer" ends it answered with them.
func TestTeamOnTimeoutAnswerAndExpire(t *testing.T) {
	h := start(t)
	asks := map[interaction.OnTimeout]interaction.Ask{}
	for _, on := range []interaction.OnTimeout{interaction.OnTimeoutExpire, interaction.OnTimeoutAnswer} {
		in := deployApproval(interaction.ResponseCount{N: 2}, alice, bob)
		in.OnTimeout, in.Timeout = on, interaction.Duration(10*time.Minute)
		asks[on] = h.create(in)
		h.answer(asks[on], alice, map[int]string{0: "Yes"})
		h.waitEphemeral(alice, "Your answer is in: 1 of 2")
		if err := h.fake.WaitFor(ctxT(t), func() bool { return len(h.get(asks[on].ID).Responses) == 1 }); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Advance(10 * time.Minute)
	exp := h.waitAsk(asks[interaction.OnTimeoutExpire].ID)
	if exp.Status != interaction.StatusExpired || exp.Error.Code != interaction.AskTimeout || len(exp.Responses) != 1 || exp.Answer != nil {
		t.Fatalf("expire: %s", mustJSON(t, exp))
	}
	ans := h.waitAsk(asks[interaction.OnTimeoutAnswer].ID)
	if ans.Status != interaction.StatusAnswered || ans.AnsweredBy != nil || ans.Answer.Answers[0].Selected[0] != "Yes" || len(ans.Responses) != 1 {
		t.Fatalf("answer: %s", mustJSON(t, ans))
	}
	if s := blocksText(h.waitEnded(exp)); !strings.Contains(s, "not enough answers") || !strings.Contains(s, "Responses (1 of 2): <@U0ALICE>") {
		t.Fatalf("expired message: %s", s)
	}
	noPicksShown(t, h.fake)
}

// The Nth and the (N+1)th press Submit at the same instant: exactly N
// responses count, the ask ends once, the other is told it ended.
func TestTeamNthAndNextSubmitAtOnce(t *testing.T) {
	h := start(t)
	ask := h.create(deployApproval(interaction.ResponseCount{N: 2}, alice, bob, carol))
	h.answer(ask, alice, map[int]string{0: "Yes"})
	h.waitEphemeral(alice, "1 of 2")
	ctx := ctxT(t)
	// Both clients show the same rendering with their own pick.
	var thaws []func()
	for _, who := range []string{bob, carol} {
		if _, err := h.fake.Person(who).Select(ctx, channel, ask.TS, control(0, "select"), "Yes"); err != nil {
			t.Fatal(err)
		}
		thaw, err := h.fake.Person(who).Freeze(channel, ask.TS)
		if err != nil {
			t.Fatal(err)
		}
		thaws = append(thaws, thaw)
	}
	var wg sync.WaitGroup
	for _, who := range []string{bob, carol} {
		wg.Go(func() {
			if _, err := h.fake.Person(who).Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, thaw := range thaws {
		thaw()
	}
	got := h.waitAsk(ask.ID)
	if len(got.Responses) != 2 || got.Status != interaction.StatusAnswered {
		t.Fatalf("ended with %d responses: %s", len(got.Responses), mustJSON(t, got))
	}
	loser := carol
	if got.AnsweredBy.ID == carol {
		loser = bob
	}
	h.waitEphemeral(loser, "already ended")
	// Every click was acked, and acked only once stored or refused.
	if again := h.get(ask.ID); mustJSON(t, again) != mustJSON(t, got) {
		t.Fatalf("the ask changed after it ended")
	}
	if n := strings.Count(mustJSON(t, h.fake.Calls()), `"Method":"chat.update"`); n == 0 {
		t.Fatal("no update")
	}
	noPicksShown(t, h.fake)
}

// A person who submits again replaces their response (which moves to the
// end); the count is of people.
func TestTeamResubmitReplaces(t *testing.T) {
	h := start(t)
	in := ask1(question("db", "Which database?", "SQLite", "Postgres"))
	in.Questions[0].Display = interaction.DisplayMenu
	in.Responses, in.Responders = interaction.ResponseCount{N: 3}, []string{alice, bob, carol}
	ask := h.create(in)
	h.answer(ask, alice, map[int]string{0: "SQLite"})
	h.waitEphemeral(alice, "1 of 3")
	h.answer(ask, bob, map[int]string{0: "SQLite"})
	h.waitEphemeral(bob, "2 of 3")
	h.answer(ask, alice, map[int]string{0: "Postgres"})
	if err := h.fake.WaitFor(ctxT(t), func() bool {
		r := h.get(ask.ID).Responses
		return len(r) == 2 && r[1].User.ID == alice && r[1].Answer.Answers[0].Selected[0] == "Postgres"
	}); err != nil {
		t.Fatalf("alice's second submit did not replace her first: %s", mustJSON(t, h.get(ask.ID)))
	}
	h.answer(ask, carol, map[int]string{0: "Postgres"})
	got := h.waitAsk(ask.ID)
	if mustJSON(t, got.Answer) != `{"answers":[{"id":"db","selected":["Postgres"]}]}` || got.Tally["db"]["SQLite"] != 1 || got.Tally["db"]["Postgres"] != 2 {
		t.Fatalf("ended: %s", mustJSON(t, got))
	}
	var order []string
	for _, r := range got.Responses {
		order = append(order, r.User.ID)
	}
	if fmt.Sprint(order) != fmt.Sprint([]string{bob, alice, carol}) {
		t.Fatalf("responses in order %v", order)
	}
	noPicksShown(t, h.fake)
}

// Alice's skip and "Other" text are hers: the message never shows them,
// and bob's response holds none of them.
func TestTeamPicksStayPrivate(t *testing.T) {
	h := start(t)
	ctx := ctxT(t)
	in := ask1(question("db", "Which database?", "SQLite", "Postgres"), question("why", "Why?"))
	in.Responses, in.Responders = interaction.ResponseCount{N: 2}, []string{alice, bob}
	ask := h.create(in)
	pa := h.fake.Person(alice)
	if _, err := pa.Select(ctx, channel, ask.TS, control(0, "select"), "Postgres"); err != nil {
		t.Fatal(err)
	}
	if _, err := pa.Click(ctx, channel, ask.TS, control(1, "other")); err != nil {
		t.Fatal(err)
	}
	view, err := pa.WaitView(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := pa.Type(ctx, view.ID, slackfake.ByActionID("text"), "row-level locks"); err != nil {
		t.Fatal(err)
	}
	if _, err := pa.Submit(ctx, view.ID); err != nil {
		t.Fatal(err)
	}
	h.waitEphemeral(alice, "Noted your answer")
	h.answer(ask, bob, map[int]string{0: "SQLite"})
	h.waitEphemeral(bob, "1 of 2")
	got := h.get(ask.ID)
	if len(got.Responses) != 1 || mustJSON(t, got.Responses[0].Answer) != `{"answers":[{"id":"db","selected":["SQLite"]},{"id":"why","selected":[]}]}` {
		t.Fatalf("bob's response: %s", mustJSON(t, got.Responses))
	}
	if m, _ := h.fake.Message(channel, ask.TS); strings.Contains(string(m.Blocks), "row-level") || strings.Contains(string(m.Blocks), "Postgres\"}") {
		t.Fatalf("the message shows alice's picks: %s", m.Blocks)
	}
	if _, err := pa.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	end := h.waitAsk(ask.ID)
	want := `{"answers":[{"id":"db","selected":["SQLite","Postgres"]},{"id":"why","selected":[],"custom":"alice: row-level locks"}]}`
	if mustJSON(t, end.Answer) != want {
		t.Fatalf("team answer\n got %s\nwant %s", mustJSON(t, end.Answer), want)
	}
	noPicksShown(t, h.fake)
}

// The reminder of a team ask mentions only those who have not answered:
// of "all", of N of a user group (its members, never the group, which
// would ping those who answered); one that waits for any N people says
// how many more it needs.
func TestTeamRemindersMentionOnlyTheMissing(t *testing.T) {
	h := start(t)
	in := deployApproval(interaction.ResponseCount{All: true}, alice, bob, carol)
	in.RemindAfter = interaction.Duration(5 * time.Minute)
	ask := h.create(in)
	anyone := deployApproval(interaction.ResponseCount{N: 3})
	anyone.RemindAfter = interaction.Duration(5 * time.Minute)
	ask2 := h.create(anyone)
	group := deployApproval(interaction.ResponseCount{N: 2}, "S0OPS", bob) // S0OPS: alice and carol
	group.RemindAfter = interaction.Duration(5 * time.Minute)
	ask3 := h.create(group)
	h.answer(ask, alice, map[int]string{0: "Yes"})
	h.waitEphemeral(alice, "1 of 3")
	h.answer(ask2, alice, map[int]string{0: "Yes"})
	h.waitEphemeral(alice, "Your answer is in: 1 of 3")
	h.answer(ask3, alice, map[int]string{0: "Yes"})
	h.waitEphemeral(alice, "Your answer is in: 1 of 2")
	if err := h.fake.WaitFor(ctxT(t), func() bool {
		return len(h.get(ask2.ID).Responses) == 1 && len(h.get(ask.ID).Responses) == 1 && len(h.get(ask3.ID).Responses) == 1
	}); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(5 * time.Minute)
	reminder := func(a interaction.Ask) string {
		var text string
		if err := h.fake.WaitFor(ctxT(t), func() bool {
			for _, m := range h.fake.Messages(channel) {
				if m.ThreadTS == a.TS && strings.Contains(m.Text, "Reminder") {
					text = m.Text
					return true
				}
			}
			return false
		}); err != nil {
			t.Fatalf("no reminder for %s", a.ID)
		}
		return text
	}
	if text := reminder(ask); strings.Contains(text, alice) || !strings.Contains(text, "<@"+bob+">") || !strings.Contains(text, "<@"+carol+">") {
		t.Fatalf("reminder %q", text)
	}
	if text := reminder(ask2); strings.Contains(text, alice) || !strings.Contains(text, "needs 2 more answers") {
		t.Fatalf("reminder %q", text)
	}
	if text := reminder(ask3); strings.Contains(text, alice) || strings.Contains(text, "S0OPS") ||
		!strings.Contains(text, "<@"+carol+">") || !strings.Contains(text, "<@"+bob+">") {
		t.Fatalf("reminder %q", text)
	}
}

// A required question has no Skip, and a Submit leaving it unanswered is
// told which question and changes nothing; allowOther false removes
// Other…. Both on a one-response ask.
func TestRequiredAndNoOther(t *testing.T) {
	h := start(t)
	no := false
	in := ask1(question("deploy", "Deploy v1.4.2?", "Yes", "No"), question("env", "Where?", "staging", "prod"))
	in.Questions[0].Required = true
	in.Questions[1].AllowOther = &no
	ask := h.create(in)
	m, _ := h.fake.Message(channel, ask.TS)
	s := string(m.Blocks)
	if strings.Contains(s, ".0.skip") || !strings.Contains(s, ".0.other") || strings.Contains(s, ".1.other") || !strings.Contains(s, ".1.skip") {
		t.Fatalf("controls: %s", s)
	}
	h.answer(ask, alice, map[int]string{1: "prod"})
	h.waitEphemeral(alice, "Please answer “Deploy v1.4.2?”")
	if got := h.get(ask.ID); got.Status != interaction.StatusPending {
		t.Fatalf("a submit without the required answer ended the ask: %s", got.Status)
	}
	h.answer(ask, alice, map[int]string{0: "Yes", 1: "prod"})
	if got := h.waitAsk(ask.ID); mustJSON(t, got.Answer) != `{"answers":[{"id":"deploy","selected":["Yes"]},{"id":"env","selected":["prod"]}]}` {
		t.Fatalf("answer %s", mustJSON(t, got.Answer))
	}
}

// kill -9 between two people's submits loses nothing: alice's response,
// acknowledged before the crash, is on the ask after the restart, and
// bob's Submit then ends it with both.
func TestProcessTeamKilledBetweenSubmits(t *testing.T) {
	r := newProcRig(t)
	p1 := r.serve()
	ask, code := r.post(deployApproval(interaction.ResponseCount{N: 2}, alice, bob))
	if code != 201 {
		t.Fatalf("create: %d", code)
	}
	ctx := r.ctx()
	pa := r.fake.Person(alice)
	if _, err := pa.Select(ctx, channel, ask.TS, control(0, "select"), "Yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := pa.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil { // acked: must survive
		t.Fatal(err)
	}
	p1.kill9(t)
	r.serve()
	got := r.get(ask.ID, 0)
	if got.Status != interaction.StatusPending || len(got.Responses) != 1 || got.Responses[0].User.ID != alice {
		t.Fatalf("after kill -9: %s", mustJSON(t, got))
	}
	pb := r.fake.Person(bob)
	if _, err := pb.Select(ctx, channel, ask.TS, control(0, "select"), "Yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.Click(ctx, channel, ask.TS, control(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	got = r.get(ask.ID, 10*time.Second)
	if got.Status != interaction.StatusAnswered || len(got.Responses) != 2 || got.AnsweredBy.ID != bob || got.Tally["deploy"]["Yes"] != 2 {
		t.Fatalf("after bob: %s", mustJSON(t, got))
	}
}
