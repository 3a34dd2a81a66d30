package interaction

import "slices"

// The kinds of an ask's audit-trail events (design.md "Audit trail"), in
// the order of an ask's life. store.Event carries them.
const (
	EventCreated   = "created"
	EventPosted    = "posted"
	EventNotified  = "notified"
	EventReminded  = "reminded"
	EventEscalated = "escalated"
	EventHandedOff = "handed_off"
	EventResponse  = "response"
	EventEnded     = "ended"
)

// EventKinds lists every kind.
var EventKinds = []string{EventCreated, EventPosted, EventNotified, EventReminded, EventEscalated, EventHandedOff, EventResponse, EventEnded}

// DefaultCallbackEvents is what a callback receives when callbackEvents
// is absent: the ask resource when the ask ends.
var DefaultCallbackEvents = []string{EventEnded}

// CallbackKinds returns the kinds ask a's callback receives: its
// CallbackEvents, else DefaultCallbackEvents.
func (a Ask) CallbackKinds() []string {
	if len(a.CallbackEvents) == 0 {
		return DefaultCallbackEvents
	}
	return a.CallbackEvents
}

// WantsCallback reports whether a's callback receives events of kind.
func (a Ask) WantsCallback(kind string) bool { return slices.Contains(a.CallbackKinds(), kind) }

// validateCallbackEvents checks callbackEvents: known kinds, each once.
func validateCallbackEvents(kinds []string) error {
	for i, k := range kinds {
		if !slices.Contains(EventKinds, k) {
			return Errorf(InvalidQuestion, "callbackEvents[%d] %q: want one of %v", i, k, EventKinds)
		}
		if slices.Index(kinds, k) != i {
			return Errorf(InvalidQuestion, "callbackEvents[%d] %q: listed twice", i, k)
		}
	}
	return nil
}
