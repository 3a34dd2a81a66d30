package interaction

import (
	"strings"
	"testing"
	"time"
)

func TestValidateReach(t *testing.T) {
	q := Request{Questions: []Question{{ID: "a", Question: "Go?"}}}
	d := func(s string) Duration { v, _ := ParseDuration(s); return Duration(v) }
	step := func(after string, who ...string) EscalationStep {
		return EscalationStep{After: d(after), Responders: who}
	}
	now := time.Now()
	for _, c := range []struct {
		name string
		in   AskInput
		want string // "" valid; else a part of the message
	}{
		{"dm", AskInput{Notify: NotifyDM}, ""},
		{"bad notify", AskInput{Notify: "pager"}, `notify "pager"`},
		{"remind every", AskInput{RemindAfter: d("5m"), RemindEvery: d("1m")}, ""},
		{"remind every too short", AskInput{RemindAfter: d("5m"), RemindEvery: d("59s")}, "remindEvery 59s: at least 1m0s"},
		{"remind every alone", AskInput{RemindEvery: d("10m")}, "remindEvery needs remindAfter"},
		{"steps", AskInput{Timeout: d("2h"), Escalation: []EscalationStep{step("30m", "U0A"), {After: d("1h"), Responders: []string{"S0OPS"}, Channel: "C0OPS", Notify: NotifyDM}}}, ""},
		{"no after", AskInput{Escalation: []EscalationStep{step("0s", "U0A")}}, "escalation[0].after"},
		{"not increasing", AskInput{Escalation: []EscalationStep{step("30m", "U0A"), step("30m", "U0B")}}, "escalation[1].after 30m0s: steps must come in strictly increasing order"},
		{"after the deadline", AskInput{Timeout: d("1h"), Escalation: []EscalationStep{step("1h", "U0A")}}, "before the deadline"},
		{"nobody", AskInput{Escalation: []EscalationStep{step("1m")}}, "escalation[0].responders"},
		{"bad step notify", AskInput{Escalation: []EscalationStep{{After: d("1m"), Responders: []string{"U0A"}, Notify: "sms"}}}, `escalation[0].notify "sms"`},
		{"fired", AskInput{Escalation: []EscalationStep{{After: d("1m"), Responders: []string{"U0A"}, FiredAt: &now}}}, "escalation[0].firedAt"},
		{"with all", AskInput{Responders: []string{"U0A"}, Responses: ResponseCount{All: true}, Escalation: []EscalationStep{step("1m", "U0B")}}, `not allowed with responses "all"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.in.Request = q
			err := ValidateInput(c.in)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || ErrorCode(err) != InvalidQuestion || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want INVALID_QUESTION with %q", err, c.want)
			}
		})
	}
}
