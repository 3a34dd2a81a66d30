package bot

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/interaction"
)

func teamRecord(wanted int, responders []string, awaited []string, answered ...string) asks.Record {
	r := asks.Record{Ask: interaction.Ask{ID: "a1", Status: interaction.StatusPending, Wanted: wanted,
		Questions:  []interaction.Question{{ID: "deploy", Question: "Deploy <v1>?", Options: []interaction.Option{{Label: "Yes"}, {Label: "No", Veto: true}}}},
		Responders: responders}, Awaited: awaited}
	for _, u := range answered {
		r.Responses = append(r.Responses, interaction.Response{User: interaction.User{ID: u},
			Answer: interaction.Answer{Answers: []interaction.AnswerItem{{ID: "deploy", Selected: []string{"Yes"}}}}})
	}
	return r
}

// A team ask's reminder mentions only who has not answered, or says how
// many more answers it needs; a one-response ask's mentions every
// responder, as before.
func TestReminderText(t *testing.T) {
	var many []string
	for i := range maxReminded + 3 {
		many = append(many, fmt.Sprintf("U0P%03d", i))
	}
	for name, c := range map[string]struct {
		rec       asks.Record
		missing   []string
		want, not []string
	}{
		"one response": {teamRecord(0, []string{"U0ONE", "S0OPS"}, nil), nil, []string{"<@U0ONE>", "<!subteam^S0OPS>", "waiting for an answer"}, nil},
		"all": {teamRecord(3, []string{"S0NINE"}, []string{"U0ONE", "U0TWO", "U0THREE"}, "U0TWO"), []string{"U0ONE", "U0THREE"},
			[]string{"<@U0ONE>", "<@U0THREE>", "your answer"}, []string{"U0TWO", "S0NINE", "more needed"}},
		"2 of 3 users": {teamRecord(2, []string{"U0ONE", "U0TWO", "U0THREE"}, nil, "U0ONE"), []string{"U0TWO", "U0THREE"},
			[]string{"<@U0TWO>", "<@U0THREE>", "1 more needed"}, []string{"U0ONE"}},
		"3 of anyone": {teamRecord(3, nil, nil, "U0ONE"), nil, []string{"needs 2 more answers"}, []string{"U0ONE", "<@"}},
		"2 of a group": {teamRecord(2, []string{"S0OPS"}, nil, "U0ONE"), []string{"U0TWO"},
			[]string{"<@U0TWO> Reminder: this question is still waiting for your answer."}, []string{"U0ONE", "subteam", "more needed"}},
		"group unread": {teamRecord(2, []string{"S0OPS"}, nil, "U0ONE"), nil, []string{"needs 1 more answer."}, []string{"U0ONE", "subteam", "<@"}},
		"many missing": {teamRecord(2, []string{"S0OPS"}, nil, "U0ONE"), many,
			[]string{"<@U0P000>", fmt.Sprintf("<@U0P%03d> (and 3 others) Reminder", maxReminded-1), "1 more needed"},
			[]string{fmt.Sprintf("U0P%03d", maxReminded), "subteam"}},
	} {
		got := reminderText(c.rec, c.missing)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", name, got, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: %q has %q", name, got, n)
			}
		}
	}
}

// TestTeamMissing: the people a team reminder mentions are asks.Missing
// for "all" and lists of users; for an ask that waits for any N of
// responders listing user groups, the groups' members (read from Slack)
// and listed users without a response, once each, never the group; a
// group that cannot be read is left out; nobody for a one-response ask or
// one anyone may answer.
func TestTeamMissing(t *testing.T) {
	r := newRig(t)
	r.fake.AddUserGroup("S0OPS", alice, "U0CAROL")
	r.fake.AddUserGroup("S0DEV", "U0CAROL", "U0DAVE")
	b := r.wire()
	for name, c := range map[string]struct {
		rec  asks.Record
		want []string
	}{
		"2 of groups and a user": {teamRecord(2, []string{"S0OPS", bob, "S0DEV"}, nil, alice), []string{"U0CAROL", bob, "U0DAVE"}},
		"unreadable group":       {teamRecord(2, []string{"S0GONE", bob}, nil, alice), []string{bob}},
		"all":                    {teamRecord(3, []string{"S0OPS"}, []string{alice, "U0CAROL", bob}, "U0CAROL"), []string{alice, bob}},
		"2 of 3 users":           {teamRecord(2, []string{alice, bob, "U0CAROL"}, nil, bob), []string{alice, "U0CAROL"}},
		"anyone":                 {teamRecord(2, nil, nil, alice), nil},
		"one response":           {teamRecord(0, []string{"S0OPS"}, nil), nil},
	} {
		if got := b.bot.teamMissing(r.ctx(), c.rec); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
}

// The notices of a team ask: the Submit's confirmation counts and lists
// the person's own answer (escaped); a refused Submit names the required
// question.
func TestTeamNotices(t *testing.T) {
	rec := teamRecord(2, []string{"U0ONE", "U0TWO"}, nil, "U0ONE")
	if got := submittedNotice(rec, "U0ONE"); !strings.Contains(got, "Your answer is in: 1 of 2") || !strings.Contains(got, "• Deploy &lt;v1&gt;?: Yes") {
		t.Errorf("pending: %q", got)
	}
	rec.Responses[0].Answer.Answers[0].Selected = []string{"No"}
	rec.Status, rec.AnsweredBy, rec.Answer = interaction.StatusAnswered, &interaction.User{ID: "U0ONE"}, &rec.Responses[0].Answer
	if got := submittedNotice(rec, "U0ONE"); !strings.Contains(got, "veto ended the question") {
		t.Errorf("veto: %q", got)
	}
	if got := requiredNotice(rec, &asks.RequiredError{Questions: []int{0}}); !strings.Contains(got, "“Deploy &lt;v1&gt;?”") {
		t.Errorf("required: %q", got)
	}
	if got := requiredNotice(rec, errors.New("x")); !strings.Contains(got, "every required question") {
		t.Errorf("required without names: %q", got)
	}
	if got := alreadyEndedNotice(rec); !strings.Contains(got, "<@U0ONE> vetoed it (No)") {
		t.Errorf("vetoed: %q", got)
	}
	rec.Answer = &interaction.Answer{Answers: []interaction.AnswerItem{{ID: "deploy", Selected: []string{"Yes"}}}}
	if got := alreadyEndedNotice(rec); !strings.Contains(got, "already ended") || !strings.Contains(got, "1 of 2 responses") {
		t.Errorf("ended: %q", got)
	}
}

// TestTeamApproveButtonIsConfirmed: on a team ask, a plan-review's
// approve button only fills the person's draft, and their client shows
// nothing chosen, so they are told what was noted; their Submit then
// sends it.
func TestTeamApproveButtonIsConfirmed(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	q := interaction.Question{ID: "plan", Question: "Ship this plan?", Detail: "1. build\n2. deploy",
		Options: []interaction.Option{{Label: "Approve"}, {Label: "Reject", Veto: true}},
		Intent:  &interaction.Intent{Kind: interaction.IntentPlanReview, Approve: "Approve"}, Display: interaction.DisplayMenu}
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{q}},
		Responses: interaction.ResponseCount{N: 2}, Responders: []string{alice, bob}})
	if err != nil {
		t.Fatal(err)
	}
	approve := func(blockID, actionID string, el map[string]any) bool {
		return el["type"] == "button" && strings.HasSuffix(actionID, ".0.select")
	}
	p := r.fake.Person(alice)
	if _, err := p.Click(r.ctx(), chanID, ask.TS, approve); err != nil {
		t.Fatal(err)
	}
	r.waitFor("alice is told her approval is noted", r.ephemeralHas(alice, "Noted “Approve” as your answer to “Ship this plan?”. Press *Submit*"))
	if _, err := p.Click(r.ctx(), chanID, ask.TS, buttonFinder(-1, "submit")); err != nil {
		t.Fatal(err)
	}
	r.waitFor("alice's response is in", r.ephemeralHas(alice, "Your answer is in: 1 of 2"))
	rec, err := r.store.Get(r.ctx(), ask.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Responses) != 1 || fmt.Sprint(rec.Responses[0].Answer.Answers[0].Selected) != "[Approve]" {
		t.Fatalf("responses %+v", rec.Responses)
	}
}
