package dsh

import (
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/asktest"
)

// fakeService is the shared fake AskService; the test decides how asks
// end (answer, cancel, expire, abort).
type fakeService struct{ *asktest.Fake }

func newFakeService() *fakeService {
	return &fakeService{asktest.New(asktest.Config{IDFormat: "ask%03d", DefaultChannel: "CDEFAULT", Now: time.Now})}
}

// end ends a pending ask as the test says; it fails the test if the ask
// is unknown or has ended.
func (f *fakeService) end(t *testing.T, id string, fn func(a *interaction.Ask)) {
	t.Helper()
	if !f.Finish(id, fn) {
		t.Fatalf("fake: ask %s is unknown or already ended", id)
	}
}

func (f *fakeService) answer(t *testing.T, id string, items ...interaction.AnswerItem) {
	t.Helper()
	f.end(t, id, func(a *interaction.Ask) {
		a.Status, a.Answer = interaction.StatusAnswered, &interaction.Answer{Answers: items}
		a.AnsweredBy = &interaction.User{ID: "U123", Name: "ana"}
	})
}

func (f *fakeService) cancel(t *testing.T, id string) {
	t.Helper()
	f.end(t, id, func(a *interaction.Ask) {
		a.Status, a.Error = interaction.StatusCancelled, interaction.Errorf(interaction.AskCancelled, "cancelled by ana")
	})
}

func (f *fakeService) expire(t *testing.T, id string) {
	t.Helper()
	if !f.End(id, interaction.StatusExpired, nil, nil) {
		t.Fatalf("fake: ask %s is unknown or already ended", id)
	}
}

func (f *fakeService) abort(t *testing.T, id string) {
	t.Helper()
	if !f.End(id, interaction.StatusAborted, nil, nil) {
		t.Fatalf("fake: ask %s is unknown or already ended", id)
	}
}

func (f *fakeService) seed(a interaction.Ask, key string) { f.Seed(a, key) }

func (f *fakeService) failCreates(errs ...error) { f.FailNext(asktest.OpCreate, errs...) }

func (f *fakeService) ask(id string) interaction.Ask {
	a, _ := f.Ask(id)
	return a
}

// note is the note of the withdrawal that ended ask id.
func (f *fakeService) note(id string) string {
	for _, w := range f.Withdrawals() {
		if w.ID == id && w.Ended {
			return w.Note
		}
	}
	return ""
}

func (f *fakeService) createCalls() []asktest.CreateCall     { return f.Creates() }
func (f *fakeService) withdrawCalls() []asktest.WithdrawCall { return f.Withdrawals() }
func (f *fakeService) numAsks() int                          { return f.Len() }

// askByKey waits until an ask with the idempotency key exists and returns
// it.
func (f *fakeService) askByKey(t *testing.T, key string) interaction.Ask {
	t.Helper()
	var a interaction.Ask
	eventually(t, "an ask with key "+key, func() bool {
		var ok bool
		a, ok = f.ByKey(key)
		return ok
	})
	return a
}

// eventually polls cond for up to 5s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
