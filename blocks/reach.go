package blocks

import (
	"github.com/slack-go/slack"
)

// KindHandoff is the action kind of the "Hand off…" button: it opens
// HandoffModal.
const KindHandoff Kind = "handoff"

// CallbackHandoff is the callback id of HandoffModal.
const CallbackHandoff = "slackask_handoff"

// The block_id and action_id of HandoffModal's user picker.
const (
	HandoffBlockID  = "handoff"
	HandoffActionID = "to"
)

// handoffButton is the "Hand off…" button of the bottom bar.
func handoffButton(v View) *slack.ButtonBlockElement {
	return button(v, -1, KindHandoff, "Hand off…")
}

// HandoffModal is the modal of the "Hand off…" button: the ask's first
// question and a users_select (HandoffBlockID/HandoffActionID) for the
// person to hand it to; callback_id CallbackHandoff, submit "Hand off",
// close "Back". privateMetadata is passed through unchanged.
func HandoffModal(v View, privateMetadata string) slack.ModalViewRequest {
	m := modal("Hand off", "Back", CallbackHandoff, privateMetadata)
	text := "*" + agentName(v.Request) + "* asks: " + firstQuestion(v.Request)
	pick := slack.NewOptionsSelectBlockElement(slack.OptTypeUser, plain("Choose a person"), HandoffActionID)
	m.Blocks.BlockSet = []slack.Block{
		section(text, "question"),
		slack.NewInputBlock(HandoffBlockID, plain("Hand this question to"), plain("They may answer it too, and are told so. You still may."), pick),
	}
	m.Submit = plain("Hand off")
	return m
}

// HandoffUser returns the user picked in HandoffModal from the state of
// its view_submission; false when none is.
func HandoffUser(state *slack.ViewState) (string, bool) {
	if state == nil {
		return "", false
	}
	u := state.Values[HandoffBlockID][HandoffActionID].SelectedUser
	return u, u != ""
}
