package chaos

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
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

// On replicas, a live rendering of a revision before the end may land
// after the end was drawn when another replica sent it within drawRenew
// of the end (asks/drawers.go): counted as a crossing. Sent later, of the
// ended revision, or by a single process, it breaks "ended once".
func TestRenderCrossingsWithinDrawRenew(t *testing.T) {
	render := func(rev int, live bool) string {
		if live {
			return fmt.Sprintf(`[{"type":"actions","block_id":"sa.a.%d.-1.controls","elements":[{"type":"button","action_id":"sa.a.%d.-1.submit"}]}]`, rev, rev)
		}
		return fmt.Sprintf(`[{"type":"context","block_id":"sa.a.%d.-1.outcome","elements":[{"type":"mrkdwn","text":"Answered by alice"}]}]`, rev)
	}
	ended := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	update := func(rev int, live bool, sender string, arrived time.Time) slackfake.Call {
		return slackfake.Call{Method: "chat.update", At: arrived, Params: map[string]string{
			"ts": "1.1", "blocks": render(rev, live), senderParam: sender, arrivedParam: arrived.Format(time.RFC3339Nano),
		}}
	}
	noKill := func(time.Time) string { return "" }
	for _, c := range []struct {
		name       string
		late       slackfake.Call
		replicated bool
		crossed    bool
	}{
		{"older revision, other replica, 0.6 s after the end", update(3, true, "6", ended.Add(600*time.Millisecond)), true, true},
		{"older revision, other replica, past drawRenew", update(3, true, "6", ended.Add(drawRenew+time.Second)), true, false},
		{"the ended revision, live", update(4, true, "6", ended.Add(time.Second)), true, false},
		{"older revision, the replica that drew the end", update(3, true, "2", ended.Add(time.Second)), true, false},
		{"one process", update(3, true, "6", ended.Add(time.Second)), false, false},
	} {
		calls := []slackfake.Call{update(3, true, "6", ended.Add(-time.Second)), update(4, false, "2", ended), c.late, update(4, false, "6", ended.Add(drawRenew+2*time.Second))}
		vs, crossed := renderViolations(calls, map[string]string{"1.1": "a"}, c.replicated, noKill)
		if got := crossed == 1 && len(vs) == 0; got != c.crossed {
			t.Errorf("%s: %d crossed, violations %v; want a crossing %v", c.name, crossed, vs, c.crossed)
		}
		if !c.crossed && len(vs) != 1 {
			t.Errorf("%s: violations %v, want one", c.name, vs)
		}
	}
}
