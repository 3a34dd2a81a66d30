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

// The second click on a message is judged without reading the ask again;
// after the ask ends, a click reads it and is told it ended.
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
	r.waitFor("posted", func() bool { a, _ := b.Get(context.Background(), ask.ID); return a.TS != "" })
	a, _ := b.Get(r.ctx(), ask.ID)
	p := r.fake.Person(alice)
	progress := func(q int, want string) func() bool {
		return func() bool {
			rec, _ := mem.Get(context.Background(), ask.ID)
			return len(rec.Progress) > q && fmt.Sprint(rec.Progress[q].Selected) == want
		}
	}
	if _, err := p.Select(r.ctx(), chanID, a.TS, selectFinder(0), "yes"); err != nil {
		t.Fatal(err)
	}
	r.waitFor("first pick", progress(0, "[yes]"))
	before := cs.gets.Load()
	if _, err := p.Select(r.ctx(), chanID, a.TS, selectFinder(1), "no"); err != nil {
		t.Fatal(err)
	}
	r.waitFor("second pick", progress(1, "[no]"))
	if n := cs.gets.Load() - before; n != 0 {
		t.Fatalf("second click read the ask %d times", n)
	}
	// The person's phone still shows the controls when the ask ends.
	thaw, err := p.Freeze(chanID, a.TS)
	if err != nil {
		t.Fatal(err)
	}
	defer thaw()
	if _, err := b.Withdraw(r.ctx(), ask.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Select(r.ctx(), chanID, a.TS, selectFinder(1), "yes"); err != nil {
		t.Fatal(err)
	}
	r.waitFor("told it ended", func() bool { return len(r.fake.Ephemerals(alice)) == 1 })
	if rec, _ := mem.Get(r.ctx(), ask.ID); fmt.Sprint(rec.Progress[1].Selected) != "[no]" {
		t.Fatalf("a click after the end changed the ask: %+v", rec.Progress)
	}
}

func TestPostedCache(t *testing.T) {
	var c postedCache
	rec := func(id, ts string, st interaction.Status) store.Record {
		return store.Record{Ask: interaction.Ask{ID: id, TS: ts, Status: st}, Progress: []interaction.Progress{{Skipped: true}}}
	}
	c.put(rec("unposted", "", interaction.StatusPending))
	c.put(rec("ended", "1.2", interaction.StatusAnswered))
	if _, ok := c.get("unposted"); ok {
		t.Fatal("cached an ask without a ts")
	}
	if _, ok := c.get("ended"); ok {
		t.Fatal("cached an ended ask")
	}
	c.put(rec("a", "1.2", interaction.StatusPending))
	got, ok := c.get("a")
	if !ok || got.Progress != nil {
		t.Fatalf("get = %+v %v, want the ask without progress", got, ok)
	}
	c.drop("a")
	if _, ok := c.get("a"); ok {
		t.Fatal("dropped ask still cached")
	}
	for i := range store.DefaultCacheSize + 10 {
		c.put(rec(fmt.Sprint(i), "1.2", interaction.StatusPending))
	}
	if n := c.c.Len(); n != store.DefaultCacheSize {
		t.Fatalf("%d entries, want %d", n, store.DefaultCacheSize)
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
