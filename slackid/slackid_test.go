package slackid

import (
	"strings"
	"testing"

	"github.com/slackask/slackask/interaction"
)

func TestIDs(t *testing.T) {
	for _, c := range []struct {
		id                     string
		user, group, conv, any bool
	}{
		{"U0DEV", true, false, false, true},
		{"W012AB", true, false, false, true},
		{"S0REVIEW", false, true, false, true},
		{"C0123456789", false, false, true, false},
		{"D01", false, false, true, false},
		{"U1", false, false, false, false},
		{"u0dev", false, false, false, false},
		{"U0DEV\x00", false, false, false, false},
		{"U" + strings.Repeat("A", 32), false, false, false, false},
		{"", false, false, false, false},
	} {
		if IsUser(c.id) != c.user || IsUserGroup(c.id) != c.group || IsConversation(c.id) != c.conv || IsResponder(c.id) != c.any {
			t.Errorf("%q: user %v group %v conv %v responder %v", c.id, IsUser(c.id), IsUserGroup(c.id), IsConversation(c.id), IsResponder(c.id))
		}
	}
	for ws, ok := range map[string]bool{"T0DEV": true, "E012AB": true, "U0DEV": false, "t0dev": false} {
		if IsWorkspace(ws) != ok {
			t.Errorf("IsWorkspace(%q) = %v", ws, !ok)
		}
	}
	for ts, ok := range map[string]bool{"1700000000.000100": true, "1.2": true, "1700000000": false, ".1": false, "1.": false, "1a.2": false} {
		if IsMessageTS(ts) != ok {
			t.Errorf("IsMessageTS(%q) = %v", ts, !ok)
		}
	}
}

// TestCheckAsk: every field of an ask that names a Slack thing is refused
// when it is not a Slack id of its kind, with the message the front doors
// have always given, and a valid ask passes both checks.
func TestCheckAsk(t *testing.T) {
	q := interaction.Request{Questions: []interaction.Question{{ID: "a", Question: "Go?"}}}
	after := interaction.Duration(60e9)
	ok := []interaction.AskInput{
		{Request: q, Responders: []string{"U1A", "S0TEAM"}, Mention: []string{"W0A"}},
		{Request: q, User: "U0DEV", ThreadTS: "1700000000.000100", Workspace: "E0ORG"},
		{Request: q, Channel: "C0OPS", Workspace: "T0DEV", Escalation: []interaction.EscalationStep{{After: after, Responders: []string{"S0OPS"}, Channel: "G0OPS"}}},
	}
	for i, in := range ok {
		if err := interaction.ValidateInput(in); err != nil {
			t.Errorf("ok[%d]: ValidateInput: %v", i, err)
		}
		if err := CheckAsk(in); err != nil {
			t.Errorf("ok[%d]: %v", i, err)
		}
	}
	for _, c := range []struct {
		in   interaction.AskInput
		want string
	}{
		{interaction.AskInput{Request: q, Mention: []string{"U0A", "here"}}, `mention[1] "here": not a Slack user (U…, W…) or user-group (S…) id`},
		{interaction.AskInput{Request: q, Responders: []string{"bob"}}, `responders[0] "bob": not a Slack user (U…, W…) or user-group (S…) id`},
		{interaction.AskInput{Request: q, User: "S0TEAM"}, `user "S0TEAM": not a Slack user id (U… or W…)`},
		{interaction.AskInput{Request: q, Channel: "#general"}, `channel "#general": not a Slack conversation id (C…, G…, D…)`},
		{interaction.AskInput{Request: q, Workspace: "acme"}, `workspace "acme": not a Slack team (T…) or Enterprise Grid organization (E…) id`},
		{interaction.AskInput{Request: q, ThreadTS: "1700000000"}, `threadTs "1700000000": not a Slack message timestamp`},
		{interaction.AskInput{Request: q, Escalation: []interaction.EscalationStep{{After: after, Responders: []string{"U0A"}, Channel: "#ops"}}}, `escalation[0].channel "#ops": not a Slack conversation id (C…, G…, D…)`},
		{interaction.AskInput{Request: q, Escalation: []interaction.EscalationStep{{After: after, Responders: []string{"bob"}}}}, `escalation[0].responders[0] "bob": not a Slack user (U…, W…) or user-group (S…) id`},
	} {
		if err := interaction.ValidateInput(c.in); err != nil {
			t.Errorf("%s: ValidateInput refused it first: %v", c.want, err)
			continue
		}
		err := CheckAsk(c.in)
		if interaction.ErrorCode(err) != interaction.InvalidQuestion || err.Error() != "INVALID_QUESTION: "+c.want {
			t.Errorf("got %v, want INVALID_QUESTION: %s", err, c.want)
		}
	}
}
