package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/slackid"
)

// The tool takes notify, the reminders and escalation steps as the HTTP
// body does, durations as strings or seconds; malformed steps are named.
func TestDecodeReach(t *testing.T) {
	in, _, err := decodeInput(json.RawMessage(`{"questions":[{"id":"a","question":"q"}],"responders":["U0A1"],"notify":"dm",
		"remindAfter":"10m","remindEvery":600,"escalation":[{"after":"30m","responders":[" U0A2 ","S0A3"]},{"after":3600,"responders":["U0A4"],"channel":"C0A5","notify":"dm"}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []interaction.EscalationStep{
		{After: interaction.Duration(30 * time.Minute), Responders: []string{"U0A2", "S0A3"}},
		{After: interaction.Duration(time.Hour), Responders: []string{"U0A4"}, Channel: "C0A5", Notify: interaction.NotifyDM},
	}
	if in.Notify != interaction.NotifyDM || time.Duration(in.RemindAfter) != 10*time.Minute || time.Duration(in.RemindEvery) != 10*time.Minute || !reflect.DeepEqual(in.Escalation, want) {
		t.Fatalf("decoded %+v", in)
	}
	if err := slackid.Check(in); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ raw, want string }{
		{`{"escalation":[{"responders":["U1"]}]}`, "escalation[0].after is required"},
		{`{"escalation":[{"after":"soon","responders":["U1"]}]}`, "escalation[0].after"},
		{`{"escalation":[{"after":"1m","responders":["U1"],"pager":true}]}`, "pager"},
		{`{"remindEvery":"often"}`, "remindEvery"},
	} {
		_, _, err := decodeInput(json.RawMessage(tc.raw), "")
		if interaction.ErrorCode(err) != interaction.InvalidQuestion || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want INVALID_QUESTION about %q", tc.raw, err, tc.want)
		}
	}
	for _, s := range []string{`"notify"`, `"remindEvery"`, `"escalation"`} {
		if !strings.Contains(inputSchema, s) || !strings.Contains(toolDescription, strings.Trim(s, `"`)) {
			t.Errorf("the tool does not describe %s", s)
		}
	}
}
