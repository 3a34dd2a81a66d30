package chaos

import (
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slackask/slackask/interaction"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The checkers run without SLACKASK_CHAOS: a checker that cannot see a
// violation would make every chaos run pass.
func TestLiveControls(t *testing.T) {
	pending := `[{"type":"actions","block_id":"sa.a.1.-1.controls","elements":[{"type":"button","action_id":"sa.a.1.-1.submit"}]}]`
	ended := `[{"type":"context","block_id":"sa.a.2.-1.outcome","elements":[{"type":"mrkdwn","text":"Answered by alice"}]}]`
	if !liveControls(pending) || liveControls(ended) {
		t.Fatalf("liveControls: pending %v, ended %v", liveControls(pending), liveControls(ended))
	}
	if a, b := outcomeText(ended), outcomeText(`[{"type":"context","block_id":"sa.a.3.-1.outcome","elements":[{"type":"mrkdwn","text":"Cancelled by bob"}]}]`); a == "" || a == b {
		t.Fatalf("outcomeText does not tell endings apart: %q, %q", a, b)
	}
}

func TestCompareFindsALostAct(t *testing.T) {
	ru := &run{r: &rig{}}
	a := &askModel{id: "a1", in: interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{
		{ID: "one", Question: "?", Options: []interaction.Option{{Label: "A"}, {Label: "B"}}},
		{ID: "many", Question: "?", MultiSelect: true, Options: []interaction.Option{{Label: "A"}, {Label: "B"}}},
	}}}}
	a.qs = []qModel{
		{p: interaction.Progress{Selected: []string{"B"}}, lastAck: "select [B] on one", lastAt: time.Now()},
		{p: interaction.Progress{Selected: []string{"A", "B"}}, lastAck: "select [A B] on many", lastAt: time.Now()},
	}
	right := interaction.Ask{Answer: &interaction.Answer{Answers: []interaction.AnswerItem{
		{ID: "one", Selected: []string{"B"}}, {ID: "many", Selected: []string{"B", "A"}},
	}}}
	if vs := a.compare(ru, right); len(vs) != 0 {
		t.Fatalf("the right answer (multi-select in another order) was judged wrong: %+v", vs)
	}
	lost := interaction.Ask{Answer: &interaction.Answer{Answers: []interaction.AnswerItem{
		{ID: "one", Selected: []string{}}, {ID: "many", Selected: []string{"A", "B"}},
	}}}
	if vs := a.compare(ru, lost); len(vs) != 1 || vs[0].lost != 1 {
		t.Fatalf("a lost selection was not found: %+v", vs)
	}
	a.qs[0].unsure = true // a later act whose ack never came may have cleared it
	if vs := a.compare(ru, lost); len(vs) != 0 {
		t.Fatalf("an unsure question was judged: %+v", vs)
	}
}

func TestTSTime(t *testing.T) {
	got, err := tsTime("1796302011.202205")
	if err != nil || got.UnixMicro() != 1796302011202205 {
		t.Fatalf("tsTime: %v %v", got, err)
	}
	if _, err := tsTime("x"); err == nil {
		t.Fatal("tsTime accepted a bad ts")
	}
}
