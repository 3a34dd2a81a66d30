package blocks

import (
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// The Home tab's answer form asks "Why?" beside a question whose options
// ask for a note, and its note goes with the pick of such an option only.
func TestAnswerModalNote(t *testing.T) {
	q := interaction.Question{ID: "deploy", Question: "Deploy?", Options: []interaction.Option{{Label: "Approve"}, {Label: "Reject", Note: interaction.NoteRequired}}}
	m := AnswerModal(View{AskID: "a1", Request: interaction.Request{Questions: []interaction.Question{q}}}, "")
	found := false
	for _, b := range m.Blocks.BlockSet {
		if in, ok := b.(*slack.InputBlock); ok && in.BlockID == AnswerWhyBlockID(0) {
			found = in.Optional && in.Label.Text == "Why? (if you choose Reject)"
		}
	}
	if !found {
		t.Fatal("no optional Why? input")
	}
	state := func(pick string) *slack.ViewState {
		return &slack.ViewState{Values: map[string]map[string]slack.BlockAction{
			"q0.pick":           {AnswerPickID: {Type: "static_select", SelectedOption: slack.OptionBlockObject{Value: pick}}},
			AnswerWhyBlockID(0): {AnswerWhyID: {Type: "plain_text_input", Value: " not on a Friday "}},
		}}
	}
	ps, errs := AnswerFromState([]interaction.Question{q}, state("1"))
	if len(errs) > 0 || ps[0].Note != "not on a Friday" || ps[0].Selected[0] != "Reject" {
		t.Fatalf("reject: %+v %v", ps, errs)
	}
	if ps, _ := AnswerFromState([]interaction.Question{q}, state("0")); ps[0].Note != "" {
		t.Fatalf("approve carries a note: %+v", ps)
	}
}
