package dsh

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
)

// fakeService is an in-memory interaction.AskService and NoteWithdrawer:
// the test decides how asks end (Answer, Cancel, Expire, Abort).
type fakeService struct {
	mu          sync.Mutex
	asks        map[string]*interaction.Ask
	byKey       map[string]string
	notes       map[string]string
	creates     []createCall
	withdrawals []withdrawCall
	changed     chan struct{} // closed and replaced on every change
	seq         int
	createErr   []error // returned by the next Create calls, in turn
	channel     string  // the default conversation
}

type createCall struct {
	At      time.Time
	In      interaction.AskInput
	AskID   string
	Created bool
	Err     error
}

type withdrawCall struct {
	At   time.Time
	ID   string
	Note string
}

func newFakeService() *fakeService {
	return &fakeService{
		asks: map[string]*interaction.Ask{}, byKey: map[string]string{}, notes: map[string]string{},
		changed: make(chan struct{}), channel: "CDEFAULT",
	}
}

func (f *fakeService) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func cloneAsk(a interaction.Ask) interaction.Ask {
	c := a
	c.Questions = append([]interaction.Question(nil), a.Questions...)
	if a.Agent != nil {
		ag := *a.Agent
		c.Agent = &ag
	}
	if a.Answer != nil {
		ans := interaction.Answer{Answers: append([]interaction.AnswerItem(nil), a.Answer.Answers...)}
		c.Answer = &ans
	}
	if a.Error != nil {
		e := *a.Error
		c.Error = &e
	}
	return c
}

func (f *fakeService) Create(_ context.Context, in interaction.AskInput) (interaction.Ask, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	call := createCall{At: time.Now(), In: in}
	defer func() { f.creates = append(f.creates, call) }()
	if len(f.createErr) > 0 {
		call.Err, f.createErr = f.createErr[0], f.createErr[1:]
		if call.Err != nil {
			return interaction.Ask{}, call.Err
		}
	}
	if id, ok := f.byKey[in.IdempotencyKey]; ok && in.IdempotencyKey != "" {
		call.AskID = id
		return cloneAsk(*f.asks[id]), nil
	}
	if err := interaction.Validate(in.Request); err != nil {
		call.Err = err
		return interaction.Ask{}, err
	}
	f.seq++
	ch := in.Channel
	if ch == "" {
		ch = f.channel
	}
	a := &interaction.Ask{
		ID: fmt.Sprintf("ask%03d", f.seq), Status: interaction.StatusPending, Questions: in.Questions, Agent: in.Agent,
		Channel: ch, ThreadTS: in.ThreadTS, TS: fmt.Sprintf("1700000000.%06d", f.seq), CreatedAt: time.Now(),
	}
	f.asks[a.ID] = a
	if in.IdempotencyKey != "" {
		f.byKey[in.IdempotencyKey] = a.ID
	}
	call.AskID, call.Created = a.ID, true
	f.notifyLocked()
	return cloneAsk(*a), nil
}

func (f *fakeService) Get(_ context.Context, id string) (interaction.Ask, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.asks[id]
	if !ok {
		return interaction.Ask{}, interaction.Errorf(interaction.NotFound, "no ask %s", id)
	}
	return cloneAsk(*a), nil
}

func (f *fakeService) Wait(ctx context.Context, id string) (interaction.Ask, error) {
	for {
		f.mu.Lock()
		a, ok := f.asks[id]
		if !ok {
			f.mu.Unlock()
			return interaction.Ask{}, interaction.Errorf(interaction.NotFound, "no ask %s", id)
		}
		cur, ch := cloneAsk(*a), f.changed
		f.mu.Unlock()
		if cur.Status.Ended() {
			return cur, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return cur, nil
		}
	}
}

func (f *fakeService) Withdraw(ctx context.Context, id string) (interaction.Ask, error) {
	return f.WithdrawWithNote(ctx, id, "")
}

func (f *fakeService) WithdrawWithNote(_ context.Context, id, note string) (interaction.Ask, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.withdrawals = append(f.withdrawals, withdrawCall{At: time.Now(), ID: id, Note: note})
	a, ok := f.asks[id]
	if !ok {
		return interaction.Ask{}, interaction.Errorf(interaction.NotFound, "no ask %s", id)
	}
	if !a.Status.Ended() {
		msg := "the caller withdrew the question"
		if note != "" {
			msg += ": " + note
		}
		f.endLocked(a, interaction.StatusAborted, interaction.Errorf(interaction.AskAborted, "%s", msg))
		f.notes[id] = note
	}
	return cloneAsk(*a), nil
}

func (f *fakeService) List(_ context.Context, fl interaction.ListFilter) ([]interaction.Ask, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []interaction.Ask
	for _, a := range f.asks {
		if fl.Status != "" && a.Status != fl.Status {
			continue
		}
		if !fl.Before.IsZero() && !a.CreatedAt.Before(fl.Before) {
			continue
		}
		out = append(out, cloneAsk(*a))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	limit := fl.Limit
	if limit <= 0 {
		limit = 100
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (f *fakeService) endLocked(a *interaction.Ask, st interaction.Status, e *interaction.Error) {
	now := time.Now()
	a.Status, a.EndedAt, a.Error = st, &now, e
	f.notifyLocked()
}

// end ends a pending ask as the test says; it fails the test if the ask
// is unknown or has ended.
func (f *fakeService) end(t *testing.T, id string, fn func(a *interaction.Ask)) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.asks[id]
	if !ok || a.Status.Ended() {
		t.Fatalf("fake: ask %s is unknown or already ended", id)
	}
	fn(a)
	now := time.Now()
	a.EndedAt = &now
	f.notifyLocked()
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
	f.end(t, id, func(a *interaction.Ask) {
		a.Status, a.Error = interaction.StatusExpired, interaction.Errorf(interaction.AskTimeout, "nobody answered before the deadline")
	})
}

func (f *fakeService) abort(t *testing.T, id string) {
	t.Helper()
	f.end(t, id, func(a *interaction.Ask) {
		a.Status, a.Error = interaction.StatusAborted, interaction.Errorf(interaction.AskAborted, "the caller withdrew the question")
	})
}

// seed stores an ask as if created earlier (e.g. before a restart).
func (f *fakeService) seed(a interaction.Ask, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asks[a.ID] = &a
	if key != "" {
		f.byKey[key] = a.ID
	}
	f.notifyLocked()
}

func (f *fakeService) failCreates(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.createErr = append(f.createErr, errs...)
}

func (f *fakeService) ask(id string) interaction.Ask {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cloneAsk(*f.asks[id])
}

func (f *fakeService) note(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.notes[id]
}

func (f *fakeService) createCalls() []createCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]createCall(nil), f.creates...)
}

func (f *fakeService) withdrawCalls() []withdrawCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]withdrawCall(nil), f.withdrawals...)
}

func (f *fakeService) numAsks() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asks)
}

// askByKey waits until an ask with the idempotency key exists and returns
// it.
func (f *fakeService) askByKey(t *testing.T, key string) interaction.Ask {
	t.Helper()
	var a interaction.Ask
	eventually(t, "an ask with key "+key, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		id, ok := f.byKey[key]
		if ok {
			a = cloneAsk(*f.asks[id])
		}
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
