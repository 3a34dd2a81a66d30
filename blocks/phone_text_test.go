package blocks

import (
	"strings"
	"testing"

	"github.com/slackask/slackask/interaction"
)

// A phone's push notification shows only the message's text: it names
// the people pinged and the named responders, each once (issue 28).
func TestPendingTextMentionsForThePhone(t *testing.T) {
	v := View{AskID: "a1", Rev: 1, Request: interaction.Request{Questions: []interaction.Question{{ID: "q", Question: "Ship it?"}}},
		Mention: []string{"U0AAA"}, Responders: []string{"U0AAA", "U0BBB", "S0CCC"}}
	text, _ := Message(v)
	if !strings.HasPrefix(text, "<@U0AAA> <@U0BBB> <!subteam^S0CCC> ") {
		t.Fatalf("text %q: want the mentions first, each once", text)
	}
	v.Status = interaction.StatusAnswered
	if text, _ := Message(v); strings.Contains(text, "<@") {
		t.Fatalf("ended text %q pings", text)
	}
}
