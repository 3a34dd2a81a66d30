package bot

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// countingStore counts Get calls.
type countingStore struct {
	store.Store
	gets atomic.Int64
}

func (s *countingStore) Get(ctx context.Context, id string) (store.Record, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, id)
}

// A click is judged and stored in one compare-and-set, and the message
// update renders the record that change returned: no click reads the ask
// with Get, not even the one that finds it ended (it is told so).
func TestClicksReadTheAskOnce(t *testing.T) {
	r := newRig(t)
	mem := r.store
	cs := &countingStore{Store: mem}
	r.store = cs
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	p := r.fake.Person(alice)
	progress := func(q int, want string) func() bool {
		return func() bool {
			rec, _ := mem.Get(context.Background(), ask.ID)
			return len(rec.Progress) > q && fmt.Sprint(rec.Progress[q].Selected) == want
		}
	}
	before := cs.gets.Load()
	if _, err := p.Select(r.ctx(), chanID, ask.TS, selectFinder(0), "yes"); err != nil {
		t.Fatal(err)
	}
	r.waitFor("first pick", progress(0, "[yes]"))
	if _, err := p.Select(r.ctx(), chanID, ask.TS, selectFinder(1), "no"); err != nil {
		t.Fatal(err)
	}
	r.waitFor("second pick", progress(1, "[no]"))
	// The person's phone still shows the controls when the ask ends.
	thaw, err := p.Freeze(chanID, ask.TS)
	if err != nil {
		t.Fatal(err)
	}
	defer thaw()
	if _, err := b.Withdraw(r.ctx(), ask.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Select(r.ctx(), chanID, ask.TS, selectFinder(1), "yes"); err != nil {
		t.Fatal(err)
	}
	r.waitFor("told it ended", func() bool { return len(r.fake.Ephemerals(alice)) == 1 })
	if n := cs.gets.Load() - before; n != 0 {
		t.Fatalf("clicks read the ask %d times", n)
	}
	if rec, _ := mem.Get(r.ctx(), ask.ID); fmt.Sprint(rec.Progress[1].Selected) != "[no]" {
		t.Fatalf("a click after the end changed the ask: %+v", rec.Progress)
	}
}

func TestNotifyCalledOnceWhenTheAskEnds(t *testing.T) {
	r := newRig(t)
	b, _ := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	var called, forgotten atomic.Int64
	var got interaction.Ask
	cancel := b.Notify(ask.ID, func(a interaction.Ask) { got = a; called.Add(1) })
	defer cancel()
	b.Notify(ask.ID, func(interaction.Ask) { forgotten.Add(1) })() // cancelled at once
	if _, err := b.Withdraw(r.ctx(), ask.ID); err != nil {
		t.Fatal(err)
	}
	_, _ = b.Withdraw(r.ctx(), ask.ID) // ends nothing: the ask has ended
	if called.Load() != 1 || forgotten.Load() != 0 {
		t.Fatalf("fn called %d times, cancelled fn %d times", called.Load(), forgotten.Load())
	}
	if a, _ := b.Get(r.ctx(), ask.ID); !a.Status.Ended() {
		t.Fatal("fn ran before the end was stored")
	}
	if got.ID != ask.ID || got.Status != interaction.StatusAborted {
		t.Fatalf("fn got %s %s, want the withdrawn ask", got.ID, got.Status)
	}
	cancel() // idempotent
}
