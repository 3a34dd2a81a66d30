package bot

import (
	"testing"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/interaction"
)

// The "nothing chosen" notice offers only what the message has: no Skip
// when every question is required, no Cancel on a team ask (issue 29
// item 7).
func TestNothingChosenNoticeWording(t *testing.T) {
	q := func(required bool) interaction.Question {
		return interaction.Question{ID: "deploy", Question: "Deploy?", Required: required,
			Options: []interaction.Option{{Label: "Yes"}, {Label: "No"}}}
	}
	for _, tc := range []struct {
		name     string
		required bool
		wanted   int
		want     string
	}{
		{"one person, optional", false, 0, "Nothing chosen yet: pick, skip or cancel."},
		{"one person, required", true, 0, "Nothing chosen yet: pick your answer, or cancel."},
		{"team, optional", false, 2, "Nothing chosen yet: pick or skip, then press *Submit*."},
		{"team, required", true, 2, "Nothing chosen yet: pick your answer, then press *Submit*."},
	} {
		rec := asks.Record{Ask: interaction.Ask{Questions: []interaction.Question{q(tc.required)}, Wanted: tc.wanted}}
		if got := nothingChosenNotice(rec); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A team ask's view carries each person's typed text per question, for the
// ended message to show under the tally (issue 29 item 4).
func TestViewCarriesTypedTexts(t *testing.T) {
	rec := asks.Record{Ask: interaction.Ask{ID: "a1", Status: interaction.StatusAnswered, Wanted: 2,
		Questions: []interaction.Question{{ID: "plan", Question: "Which plan?", Options: []interaction.Option{{Label: "A"}, {Label: "B"}}}},
		Responses: []interaction.Response{
			{User: interaction.User{ID: "U0ALICE", Name: "alice"}, Answer: interaction.Answer{Answers: []interaction.AnswerItem{{ID: "plan", Custom: " Plan C "}}}},
			{User: interaction.User{ID: "U0BOB", Name: "bob"}, Answer: interaction.Answer{Answers: []interaction.AnswerItem{{ID: "plan", Selected: []string{"A"}}}}},
		}}}
	v := view(rec)
	if v.Team == nil || len(v.Team.Texts["plan"]) != 1 || v.Team.Texts["plan"][0].Text != "Plan C" || v.Team.Texts["plan"][0].User.ID != "U0ALICE" {
		t.Fatalf("texts %+v", v.Team)
	}
}
