package blocks

import (
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
)

// The Home tab lists at most 20 waiting asks and 10 answered ones within
// Slack's schema and 100 blocks, each waiting ask with its Answer button.
func TestGoldenHome(t *testing.T) {
	var waiting []View
	for i := range 25 {
		v := pendingView(batchRequest())
		v.AskID = "a" + strings.Repeat("x", i%3) + string(rune('a'+i))
		if i%2 == 0 {
			v.ExpiresAt = nil
		}
		waiting = append(waiting, v)
	}
	var answered []HomeAnswered
	for i := range 12 {
		v := endedPlan()
		v.AskID = "d" + string(rune('a'+i))
		answered = append(answered, HomeAnswered{View: v, Answer: *v.Answer, At: t0})
	}
	for name, h := range map[string]slack.HomeTabViewRequest{
		"home_full":  Home(waiting, answered),
		"home_empty": Home(nil, nil),
	} {
		raw := toJSON(t, h.Blocks)
		blocksSchema, _ := loadSchemas(t)
		if err := validateSchema(blocksSchema, raw); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n := len(h.Blocks.BlockSet); n > MaxModalBlocks {
			t.Fatalf("%s: %d blocks", name, n)
		}
		compareGolden(t, name, goldenJSON(t, h))
	}
	full := string(toJSON(t, Home(waiting, answered).Blocks))
	if n := strings.Count(full, ".answerform"); n != MaxHomeWaiting {
		t.Fatalf("%d Answer buttons, want %d", n, MaxHomeWaiting)
	}
	if !strings.Contains(full, "and 5 more") || strings.Count(full, `"answered.d`) != MaxHomeAnswered {
		t.Fatalf("home: %.300s", full)
	}
}

// The Answer modal holds every question; its submission reads back as
// each question's labels or text, with the person's mistakes named.
func TestAnswerModal(t *testing.T) {
	no := false
	r := interaction.Request{Questions: []interaction.Question{
		{ID: "env", Question: "Where?", Options: []interaction.Option{{Label: "staging"}, {Label: "prod"}}, Required: true},
		{ID: "flags", Question: "Which flags?", MultiSelect: true, Options: []interaction.Option{{Label: "a"}, {Label: "b"}, {Label: "c"}}, AllowOther: &no},
		{ID: "why", Question: "Why?"},
	}}
	v := pendingView(r)
	m := AnswerModal(v, "meta")
	reportProblems(t, checkModal(t, "modal_answer", m))
	compareGolden(t, "modal_answer", goldenJSON(t, m))
	state := func(vals map[string]map[string]slack.BlockAction) *slack.ViewState {
		return &slack.ViewState{Values: vals}
	}
	ps, errs := AnswerFromState(r.Questions, state(map[string]map[string]slack.BlockAction{
		"q0.pick":  {AnswerPickID: {SelectedOption: slack.OptionBlockObject{Value: "1"}}},
		"q1.pick":  {AnswerPickID: {SelectedOptions: []slack.OptionBlockObject{{Value: "0"}, {Value: "2"}, {Value: "9"}}}},
		"q2.other": {AnswerOtherID: {Value: "  because  "}},
	}))
	if len(errs) != 0 || strings.Join(ps[0].Selected, ",") != "prod" || strings.Join(ps[1].Selected, ",") != "a,c" || ps[2].Custom != "because" {
		t.Fatalf("progress %+v errs %v", ps, errs)
	}
	_, errs = AnswerFromState(r.Questions, state(map[string]map[string]slack.BlockAction{
		"q0.pick":  {AnswerPickID: {SelectedOption: slack.OptionBlockObject{Value: "0"}}},
		"q0.other": {AnswerOtherID: {Value: "both"}},
	}))
	if !strings.Contains(errs["q0.other"], "not both") {
		t.Fatalf("errs %v", errs)
	}
	if AnswerBlockID(r.Questions[2], 2) != "q2.other" || AnswerBlockID(r.Questions[0], 0) != "q0.pick" {
		t.Fatal("AnswerBlockID")
	}
}
