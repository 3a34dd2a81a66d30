package httpapi

import "github.com/slackask/slackask/interaction"

// Fake is the in-memory AskService of this package's tests, for the
// external tests (openapi_test.go): a Notifier and an IdempotentCreator.
type Fake struct{ idemNotifySvc }

// NewFake returns an empty Fake.
func NewFake() Fake { return Fake{idemNotifySvc{notifySvc{newFake()}}} }

// End ends the ask id with status st.
func (f Fake) End(id string, st interaction.Status) { f.end(id, st) }

// Fail makes every call of the service return err (nil: succeed again).
func (f Fake) Fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.createErr = err
}

// ErrorCodes returns every code the API answers with, INTERNAL included,
// and its status.
func ErrorCodes() map[interaction.Code]int {
	out := map[interaction.Code]int{interaction.Internal: 500}
	for c, st := range statusByCode {
		out[c] = st
	}
	return out
}

// Notifications returns how many long-polls wait to be notified.
func (f Fake) Notifications() int { return f.notifications() }

// Created returns how many asks the fake created.
func (f Fake) Created() int {
	return f.fake.Len()
}
