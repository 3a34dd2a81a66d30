// Package slackid is what slackask knows of Slack without calling it: the
// syntax of its ids (what a user, user-group, conversation or workspace id
// and a message timestamp look like, and which of an ask's fields must be
// one) and the limits of what one Slack message draws (limits.go). The
// lifecycle (asks) and the domain (interaction) never import it: the Slack
// side checks an ask through the asks.Checker seam.
package slackid

import (
	"fmt"
	"strings"

	"github.com/slackask/slackask/interaction"
)

// Slack ids are a letter saying what they name followed by upper-case
// letters and digits. These are the one syntax rule for them: a value that
// fails is refused before it reaches Slack or a mention in a message.

// IsUser reports whether s looks like a Slack user id (U… or W…).
func IsUser(s string) bool { return id(s, "UW") }

// IsUserGroup reports whether s looks like a Slack user-group id (S…).
func IsUserGroup(s string) bool { return id(s, "S") }

// IsResponder reports whether s is a user or user-group id.
func IsResponder(s string) bool { return id(s, "UWS") }

// IsConversation reports whether s looks like a conversation id:
// channel (C…), private channel or group DM (G…), or DM (D…).
func IsConversation(s string) bool { return id(s, "CGD") }

// IsWorkspace reports whether s looks like a Slack team (T…) or
// Enterprise Grid organization (E…) id.
func IsWorkspace(s string) bool { return id(s, "TE") }

func id(s, first string) bool {
	if len(s) < 3 || len(s) > 32 || !strings.ContainsRune(first, rune(s[0])) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// IsMessageTS reports whether s looks like a Slack message timestamp
// ("1700000000.000100").
func IsMessageTS(s string) bool {
	sec, frac, ok := strings.Cut(s, ".")
	return ok && digits(sec, 12) && digits(frac, 9)
}

func digits(s string, most int) bool {
	if len(s) == 0 || len(s) > most {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// CheckAsk refuses an ask that Slack cannot show (CheckRequest) or whose
// fields that name Slack things are not Slack ids of the right kind:
// mention, responders, user, channel, workspace, threadTs and each
// escalation step's channel and responders. Errors are INVALID_QUESTION
// naming the field. It checks ids' syntax only (whether Slack knows them
// is bot.CheckIDs's), and it runs after interaction.ValidateInput, which
// checks everything else.
func CheckAsk(in interaction.AskInput) error {
	if err := CheckRequest(in.Request); err != nil {
		return err
	}
	for i, id := range in.Mention {
		if !IsResponder(id) {
			return interaction.Errorf(interaction.InvalidQuestion, "mention[%d] %q: not a Slack user (U…, W…) or user-group (S…) id", i, id)
		}
	}
	for i, id := range in.Responders {
		if !IsResponder(id) {
			return interaction.Errorf(interaction.InvalidQuestion, "responders[%d] %q: not a Slack user (U…, W…) or user-group (S…) id", i, id)
		}
	}
	switch {
	case in.User != "" && !IsUser(in.User):
		return interaction.Errorf(interaction.InvalidQuestion, "user %q: not a Slack user id (U… or W…)", in.User)
	case in.Channel != "" && !IsConversation(in.Channel):
		return interaction.Errorf(interaction.InvalidQuestion, "channel %q: not a Slack conversation id (C…, G…, D…)", in.Channel)
	case in.Workspace != "" && !IsWorkspace(in.Workspace):
		return interaction.Errorf(interaction.InvalidQuestion, "workspace %q: not a Slack team (T…) or Enterprise Grid organization (E…) id", in.Workspace)
	case in.ThreadTS != "" && !IsMessageTS(in.ThreadTS):
		return interaction.Errorf(interaction.InvalidQuestion, "threadTs %q: not a Slack message timestamp", in.ThreadTS)
	}
	for i, st := range in.Escalation {
		where := fmt.Sprintf("escalation[%d]", i)
		if st.Channel != "" && !IsConversation(st.Channel) {
			return interaction.Errorf(interaction.InvalidQuestion, "%s.channel %q: not a Slack conversation id (C…, G…, D…)", where, st.Channel)
		}
		for j, id := range st.Responders {
			if !IsResponder(id) {
				return interaction.Errorf(interaction.InvalidQuestion, "%s.responders[%d] %q: not a Slack user (U…, W…) or user-group (S…) id", where, j, id)
			}
		}
	}
	return nil
}

// Check is everything a slackask server on Slack checks of an ask before
// anything else (asks.Service.CheckAsk with the bot as its surface):
// interaction.ValidateInput, then CheckAsk. Doors and doubles without
// that service (the HTTP client's Service, asktest) check with it.
func Check(in interaction.AskInput) error {
	if err := interaction.ValidateInput(in); err != nil {
		return err
	}
	return CheckAsk(in)
}
