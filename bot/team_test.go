package bot

import (
	"errors"
	"strings"
	"testing"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/interaction"
)

func teamRecord(wanted int, responders []string, awaited []string, answered ...string) asks.Record {
	r := asks.Record{Ask: interaction.Ask{ID: "a1", Status: interaction.StatusPending, Wanted: wanted,
		Questions: []interaction.Question{{ID: "deploy", Question: "Deploy <v1>?", Options: []interaction.Option{{Label: "Yes"}, {Label: "No", Veto: true}}}}},
		Responders: responders, Awaited: awaited}
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
	for name, c := range map[string]struct {
		rec       asks.Record
		want, not []string
	}{
		"one response": {teamRecord(0, []string{"U0ONE", "S0OPS"}, nil), []string{"<@U0ONE>", "<!subteam^S0OPS>", "waiting for an answer"}, nil},
		"all": {teamRecord(3, []string{"S0NINE"}, []string{"U0ONE", "U0TWO", "U0THREE"}, "U0TWO"),
			[]string{"<@U0ONE>", "<@U0THREE>", "your answer"}, []string{"U0TWO", "S0NINE", "more needed"}},
		"2 of 3 users": {teamRecord(2, []string{"U0ONE", "U0TWO", "U0THREE"}, nil, "U0ONE"),
			[]string{"<@U0TWO>", "<@U0THREE>", "1 more needed"}, []string{"U0ONE"}},
		"3 of anyone":  {teamRecord(3, nil, nil, "U0ONE"), []string{"needs 2 more answers"}, []string{"U0ONE", "<@"}},
		"2 of a group": {teamRecord(2, []string{"S0OPS"}, nil, "U0ONE"), []string{"<!subteam^S0OPS>", "needs 1 more answer."}, []string{"U0ONE"}},
	} {
		got := reminderText(c.rec)
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
