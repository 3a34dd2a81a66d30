package slackfake

import (
	"encoding/json"
	"slices"
	"time"
)

// What a Slack client shows when the app does not ack in time: a warning
// icon by the element with this text for block_actions, an error at the
// foot of the modal (which stays open) for view_submission.
const (
	// ActionTimeoutText is shown for a block_actions not acked in time.
	ActionTimeoutText = "Operation timed out. Apps need to respond within 3 seconds."
	// SubmissionTimeoutText is shown for a view_submission not acked in time.
	SubmissionTimeoutText = "We had some trouble connecting. Try again?"
)

// FailedInteraction is a block_actions or view_submission payload that
// was not acked within Config.AckTimeout, so Slack showed the person an
// error and will not resend it.
type FailedInteraction struct {
	EnvelopeID string
	// Type is the payload type: "block_actions" or "view_submission".
	Type string
	// User is the person who acted.
	User string
	// Channel and TS locate the message acted on; ViewID the modal.
	Channel, TS, ViewID string
	// ActionID is the element acted on (block_actions).
	ActionID string
	// Text is what the person's client showed (ActionTimeoutText or
	// SubmissionTimeoutText).
	Text string
	// Delivered reports whether the envelope reached a socket; false when
	// no socket was live before the deadline.
	Delivered bool
	// At is when the deadline passed, by Config.Now.
	At time.Time
}

// failedInteraction describes payload as a failed interaction when it is
// one the person sees fail.
func failedInteraction(payload json.RawMessage) (FailedInteraction, bool) {
	var p struct {
		Type string `json:"type"`
		User struct {
			ID string `json:"id"`
		} `json:"user"`
		Channel struct {
			ID string `json:"id"`
		} `json:"channel"`
		Container struct {
			ChannelID string `json:"channel_id"`
			MessageTS string `json:"message_ts"`
			ViewID    string `json:"view_id"`
		} `json:"container"`
		View struct {
			ID string `json:"id"`
		} `json:"view"`
		Actions []struct {
			ActionID string `json:"action_id"`
		} `json:"actions"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return FailedInteraction{}, false
	}
	f := FailedInteraction{Type: p.Type, User: p.User.ID}
	switch p.Type {
	case "block_actions":
		f.Text = ActionTimeoutText
		f.Channel, f.TS, f.ViewID = p.Container.ChannelID, p.Container.MessageTS, p.Container.ViewID
		if f.Channel == "" {
			f.Channel = p.Channel.ID
		}
		if f.ViewID == "" {
			f.ViewID = p.View.ID
		}
		if len(p.Actions) > 0 {
			f.ActionID = p.Actions[0].ActionID
		}
	case "view_submission":
		f.Text = SubmissionTimeoutText
		f.ViewID = p.View.ID
	default:
		return FailedInteraction{}, false
	}
	return f, true
}

// FailedInteractions returns every interaction that failed in front of a
// person because it was not acked in time, oldest first.
func (s *Server) FailedInteractions() []FailedInteraction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sock.failed)
}

// UnackedInteractions counts the block_actions and view_submission
// payloads not acked within Config.AckTimeout (clicks the person saw fail):
// len(FailedInteractions()).
func (s *Server) UnackedInteractions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sock.failed)
}

// FailedInteractions returns the person's interactions that showed an
// error because the app did not ack them in time, oldest first.
func (p *Person) FailedInteractions() []FailedInteraction {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	var out []FailedInteraction
	for _, f := range p.s.sock.failed {
		if f.User == p.id {
			out = append(out, f)
		}
	}
	return out
}
