package slackid

import (
	"fmt"
	"strings"
	"testing"

	"github.com/slackask/slackask/interaction"
)

func options(n int) []interaction.Option {
	out := make([]interaction.Option, n)
	for i := range out {
		out[i] = interaction.Option{Label: fmt.Sprint("o", i)}
	}
	return out
}

func question(id string, n int, display interaction.Display, multi bool) interaction.Question {
	return interaction.Question{ID: id, Question: "Pick " + id, Options: options(n), Display: display, MultiSelect: multi}
}

// TestCheckRequest: what one Slack message cannot draw passes
// interaction.Validate and is refused here, through CheckAsk too, with the
// message the front doors have always given; what fits passes.
func TestCheckRequest(t *testing.T) {
	rows := func(n, each int) interaction.Request {
		var r interaction.Request
		for i := range n {
			r.Questions = append(r.Questions, question(string(rune('a'+i)), each, interaction.DisplayButtons, false))
		}
		return r
	}
	many := func(n int) interaction.Request {
		var r interaction.Request
		for i := range n {
			r.Questions = append(r.Questions, interaction.Question{ID: fmt.Sprint("q", i), Question: "?"})
		}
		return r
	}
	one := func(q interaction.Question) interaction.Request {
		return interaction.Request{Questions: []interaction.Question{q}}
	}
	confirm := question("q", 2, "", false)
	confirm.Options[1].Confirm = &interaction.Confirm{Deny: strings.Repeat("é", MaxConfirmButton+1)}
	for _, r := range []interaction.Request{many(MaxQuestions), one(question("q", MaxOptions, "", false)),
		one(question("q", MaxButtons, interaction.DisplayButtons, false)), one(question("q", MaxCheckboxes, interaction.DisplayButtons, true)), rows(8, 6)} {
		if err := CheckRequest(r); err != nil {
			t.Errorf("%d questions refused: %v", len(r.Questions), err)
		}
	}
	for _, c := range []struct {
		r    interaction.Request
		want string
	}{
		{many(MaxQuestions + 1), "11 questions: at most 10 fit in one Slack message"},
		{one(question("q", MaxOptions+1, "", false)), `questions[0] ("q"): 101 options: at most 100 fit in one menu`},
		{one(question("q", MaxButtons+1, interaction.DisplayButtons, false)), `questions[0] ("q"): 26 options: at most 25 fit as buttons (use display "menu")`},
		{one(question("q", MaxCheckboxes+1, interaction.DisplayButtons, true)), `questions[0] ("q"): 11 options: at most 10 fit as checkboxes (use display "menu")`},
		{one(confirm), "questions[0].options[1].confirm.deny is 31 characters: at most 30"},
		{rows(9, 10), `the buttons need 9 rows beyond each question's first; one Slack message holds 8: use display "menu" on some questions`},
	} {
		if err := interaction.Validate(c.r); err != nil {
			t.Errorf("%s: Validate refused it first: %v", c.want, err)
			continue
		}
		for _, err := range []error{CheckRequest(c.r), CheckAsk(interaction.AskInput{Request: c.r})} {
			if interaction.ErrorCode(err) != interaction.InvalidQuestion || err.Error() != "INVALID_QUESTION: "+c.want {
				t.Errorf("got %v, want INVALID_QUESTION: %s", err, c.want)
			}
		}
	}
}
