package slackid

import (
	"fmt"
	"unicode/utf8"

	"github.com/slackask/slackask/interaction"
)

// Slack's limits on what one message draws, as slackask lays an ask out:
// a message holds 50 blocks, a select menu 100 options, an actions block
// 25 elements, a checkboxes element 10 options, a confirmation dialog a
// title of 100 characters, a text of 300 and buttons of 30.
const (
	MaxQuestions     = 10  // per ask, with room for the renderer's own blocks
	MaxOptions       = 100 // per question: a static_select holds 100
	MaxButtons       = 25  // buttons of one question
	MaxCheckboxes    = 10  // options of a checkboxes question
	ButtonsPerRow    = 5   // buttons in one row (actions block)
	MaxButtonRows    = 8   // rows of buttons in one message beyond each question's first
	MaxConfirmTitle  = 100 // characters
	MaxConfirmText   = 300
	MaxConfirmButton = 30
)

// MaxOptionsOf is the most options a question of kind k can draw (0 for
// a kind without options).
func MaxOptionsOf(k interaction.Kind) int {
	switch k {
	case interaction.KindMenu, interaction.KindMultiMenu:
		return MaxOptions
	case interaction.KindButtons:
		return MaxButtons
	case interaction.KindCheckbox:
		return MaxCheckboxes
	}
	return 0
}

// CheckRequest refuses a request that one Slack message cannot draw: too
// many questions, options for a menu or for its kind, confirmation texts
// too long, or more rows of buttons than the message holds beside its
// other blocks. Errors are INVALID_QUESTION naming the field. It runs
// after interaction.Validate, which checks everything else of a request:
// a request both accept is drawn within Slack's limits (blocks).
func CheckRequest(r interaction.Request) error {
	if len(r.Questions) > MaxQuestions {
		return interaction.Errorf(interaction.InvalidQuestion, "%d questions: at most %d fit in one Slack message", len(r.Questions), MaxQuestions)
	}
	rows := 0
	for i, q := range r.Questions {
		if len(q.Options) > MaxOptions {
			return interaction.Errorf(interaction.InvalidQuestion, "questions[%d] (%q): %d options: at most %d fit in one menu", i, q.ID, len(q.Options), MaxOptions)
		}
		k := interaction.KindOf(r, i)
		if most := MaxOptionsOf(k); interaction.Kinds[k].Options && len(q.Options) > most {
			return interaction.Errorf(interaction.InvalidQuestion, "questions[%d] (%q): %d options: at most %d fit as %s (use display \"menu\")", i, q.ID, len(q.Options), most, k)
		}
		for j, o := range q.Options {
			c := o.Confirm
			if c == nil {
				continue
			}
			for _, f := range []struct {
				name, v string
				max     int
			}{{"title", c.Title, MaxConfirmTitle}, {"text", c.Text, MaxConfirmText}, {"confirm", c.Confirm, MaxConfirmButton}, {"deny", c.Deny, MaxConfirmButton}} {
				if n := utf8.RuneCountInString(f.v); n > f.max {
					return interaction.Errorf(interaction.InvalidQuestion, "%s.confirm.%s is %d characters: at most %d", fmt.Sprintf("questions[%d].options[%d]", i, j), f.name, n, f.max)
				}
			}
		}
		if k == interaction.KindButtons {
			rows += (len(q.Options) - 1) / ButtonsPerRow
		}
	}
	if rows > MaxButtonRows {
		return interaction.Errorf(interaction.InvalidQuestion, "the buttons need %d rows beyond each question's first; one Slack message holds %d: use display \"menu\" on some questions", rows, MaxButtonRows)
	}
	return nil
}
