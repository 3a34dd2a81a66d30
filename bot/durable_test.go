package bot

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store"
)

// gateStore holds the first Update after it is armed until release is
// closed.
type gateStore struct {
	store.Store
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gateStore) open() { g.once.Do(func() { close(g.release) }) }

func (g *gateStore) Update(ctx context.Context, id string, fn func(*store.Record) error) (store.Record, error) {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Store.Update(ctx, id, fn)
}

// A person's act is acknowledged only after its change is stored (issue
// 14.1): while the store holds the act's write, a later envelope on the
// same connection is acked and the act's is not; and at the moment the
// act's ack arrives, the change is already in the store, so a process
// killed right after the ack has it.
func TestAckAfterTheChangeIsStored(t *testing.T) {
	for _, kind := range []string{"skip", "other"} {
		t.Run(kind, func(t *testing.T) {
			r := newRig(t)
			mem := r.store
			gs := &gateStore{Store: mem, entered: make(chan struct{}), release: make(chan struct{})}
			r.store = gs
			b, _ := r.start()
			t.Cleanup(gs.open) // before the bot stops: a failing test must not leave the act held
			ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
			if err != nil {
				t.Fatal(err)
			}
			p := r.fake.Person(alice)
			act := func() error {
				_, err := p.Click(r.ctx(), chanID, ask.TS, buttonFinder(0, "skip"))
				return err
			}
			if kind == "other" {
				if _, err := p.Click(r.ctx(), chanID, ask.TS, buttonFinder(0, "other")); err != nil {
					t.Fatal(err)
				}
				view, err := p.WaitView(r.ctx())
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Type(r.ctx(), view.ID, slackfake.ByActionID("text"), "later"); err != nil {
					t.Fatal(err)
				}
				act = func() error { _, err := p.Submit(r.ctx(), view.ID); return err }
			}
			_, _, _, before := r.fake.AckStats()
			gs.armed.Store(true)
			done := make(chan error, 1)
			go func() { done <- act() }()
			<-gs.entered // the act's write is held
			// A later envelope, which the reader acks as soon as it reads it:
			// acks on one connection arrive in the order they were sent.
			closed := map[string]any{"type": "view_closed", "user": map[string]any{"id": alice}, "view": map[string]any{"id": "V0SENTINEL"}}
			if _, err := r.fake.Deliver(r.ctx(), closed); err != nil {
				t.Fatal(err)
			}
			if _, _, _, n := r.fake.AckStats(); n != before+1 {
				t.Fatalf("%d acks while the act's change was not stored, want only the sentinel's", n-before)
			}
			gs.open()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			rec, err := mem.Get(context.Background(), ask.ID) // at once: no waiting
			if err != nil {
				t.Fatal(err)
			}
			if p := rec.Progress[0]; !p.Skipped && p.Custom != "later" {
				t.Fatalf("acked, but the change is not stored: %+v", rec.Progress)
			}
		})
	}
}
