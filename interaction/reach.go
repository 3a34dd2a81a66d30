package interaction

import (
	"fmt"
	"time"
)

// Notify says how the named responders of an ask learn of it.
type Notify string

// The ways of notifying responders.
const (
	// NotifyMention mentions them in the channel message (the default).
	NotifyMention Notify = "mention"
	// NotifyDM also sends each of them the ask in a DM from the app,
	// with its own controls.
	NotifyDM Notify = "dm"
)

// Limits of the reach fields.
const (
	// MinRemindEvery is the shortest pause between repeated reminders.
	MinRemindEvery = time.Minute
	// MaxReminders bounds the reminders one ask posts, the first included.
	MaxReminders = 10
	// MaxEscalationSteps bounds the steps of one ask's escalation.
	MaxEscalationSteps = 10
)

// EscalationStep is one step of an ask's escalation: After its creation,
// while it is pending, Responders are added to who may answer and are
// notified (a thread reply mentioning them; a DM each with Notify "dm";
// with Channel, a further copy of the ask posted there). FiredAt is set by
// the server once the step has fired; a request must not set it.
type EscalationStep struct {
	After      Duration   `json:"after"`
	Responders []string   `json:"responders"`
	Channel    string     `json:"channel,omitempty"`
	Notify     Notify     `json:"notify,omitempty"`
	FiredAt    *time.Time `json:"firedAt,omitempty"`
}

// Handoff records that From handed the ask to To, who may then answer it
// too (From still may).
type Handoff struct {
	From User      `json:"from"`
	To   User      `json:"to"`
	At   time.Time `json:"at"`
}

// validateReach checks the reach fields of in: notify, remindEvery and the
// escalation steps (INVALID_QUESTION naming the field).
func validateReach(in AskInput) error {
	switch in.Notify {
	case "", NotifyMention, NotifyDM:
	default:
		return Errorf(InvalidQuestion, "notify %q: want %q or %q", in.Notify, NotifyMention, NotifyDM)
	}
	if in.RemindEvery != 0 {
		switch {
		case time.Duration(in.RemindEvery) < MinRemindEvery:
			return Errorf(InvalidQuestion, "remindEvery %s: at least %s", time.Duration(in.RemindEvery), MinRemindEvery)
		case in.RemindAfter == 0:
			return Errorf(InvalidQuestion, "remindEvery needs remindAfter: when the first reminder goes out")
		}
	}
	if len(in.Escalation) == 0 {
		return nil
	}
	if in.Responses.All {
		return Errorf(InvalidQuestion, `escalation: not allowed with responses "all", which waits for exactly the people named when the ask is created`)
	}
	if len(in.Escalation) > MaxEscalationSteps {
		return Errorf(InvalidQuestion, "escalation: %d steps, at most %d", len(in.Escalation), MaxEscalationSteps)
	}
	var prev time.Duration
	for i, st := range in.Escalation {
		where := fmt.Sprintf("escalation[%d]", i)
		after := time.Duration(st.After)
		switch {
		case after <= 0:
			return Errorf(InvalidQuestion, "%s.after: a duration after the ask's creation is required, e.g. \"30m\"", where)
		case i > 0 && after <= prev:
			return Errorf(InvalidQuestion, "%s.after %s: steps must come in strictly increasing order (the step before is at %s)", where, after, prev)
		case in.Timeout > 0 && after >= time.Duration(in.Timeout):
			return Errorf(InvalidQuestion, "%s.after %s: every step must come before the deadline (timeout %s)", where, after, time.Duration(in.Timeout))
		case len(st.Responders) == 0:
			return Errorf(InvalidQuestion, "%s.responders: name the user (U…, W…) or user-group (S…) ids to add", where)
		case len(st.Responders) > MaxResponders:
			return Errorf(InvalidQuestion, "%s.responders: %d ids, at most %d", where, len(st.Responders), MaxResponders)
		case st.FiredAt != nil:
			return Errorf(InvalidQuestion, "%s.firedAt: set by the server when the step fires, not by a request", where)
		}
		switch st.Notify {
		case "", NotifyMention, NotifyDM:
		default:
			return Errorf(InvalidQuestion, "%s.notify %q: want %q or %q", where, st.Notify, NotifyMention, NotifyDM)
		}
		prev = after
	}
	return nil
}
