package bot

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/journal"
	"github.com/slackask/slackask/store"
)

// openJournal opens a journal in the test's directory for the rig's bots.
func (r *rig) openJournal(path string) *journal.Journal {
	r.t.Helper()
	j, replay, err := journal.Open(path)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = j.Close() })
	r.journal, r.replay = j, replay
	return j
}

// With a journal, a block_actions envelope is acked once journaled, before
// its change is stored (issue 14): while the store holds the act's write,
// the click's ack has arrived; once released, the change lands and the
// journal entry is done.
func TestJournaledAckDoesNotWaitForTheStore(t *testing.T) {
	for _, kind := range []string{"skip", "select"} {
		t.Run(kind, func(t *testing.T) {
			r := newRig(t)
			mem := r.store
			gs := &gateStore{Store: mem, entered: make(chan struct{}), release: make(chan struct{})}
			r.store = gs
			j := r.openJournal(filepath.Join(t.TempDir(), "db-acks"))
			b, _ := r.start()
			t.Cleanup(gs.open)
			ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
			if err != nil {
				t.Fatal(err)
			}
			gs.armed.Store(true)
			p := r.fake.Person(alice)
			if kind == "skip" {
				_, err = p.Click(r.ctx(), chanID, ask.TS, buttonFinder(0, "skip"))
			} else {
				_, err = p.Select(r.ctx(), chanID, ask.TS, selectFinder(0), "no")
			}
			if err != nil {
				t.Fatalf("the click was not acked while the store held its write: %v", err)
			}
			<-gs.entered // the act's write is held, the ack is in
			if n := j.Outstanding(); n != 1 {
				t.Fatalf("%d journal entries outstanding while the act is held, want 1", n)
			}
			if rec, _ := mem.Get(context.Background(), ask.ID); len(rec.Progress) > 0 && (rec.Progress[0].Skipped || len(rec.Progress[0].Selected) > 0) {
				t.Fatalf("stored before the write was released: %+v", rec.Progress)
			}
			gs.open()
			r.waitFor("the change lands", func() bool {
				rec, _ := mem.Get(context.Background(), ask.ID)
				return len(rec.Progress) > 0 && (rec.Progress[0].Skipped || len(rec.Progress[0].Selected) == 1)
			})
			r.waitFor("the journal entry is done", func() bool { return j.Outstanding() == 0 })
		})
	}
}

// failStore fails the first Update after it is armed, as a full disk
// would.
type failStore struct {
	store.Store
	armed atomic.Bool
	fails atomic.Int32
}

var errDiskFull = errors.New("disk I/O error")

func (f *failStore) Update(ctx context.Context, id string, fn func(*store.Record) error) (store.Record, error) {
	if f.armed.CompareAndSwap(true, false) {
		f.fails.Add(1)
		return store.Record{}, errDiskFull
	}
	return f.Store.Update(ctx, id, fn)
}

// An acked click whose change could not be stored stays in the journal,
// and the next start replays it before its connections open: the click is
// applied, its entry done. A replayed act that is refused (here the
// replay of the same click once the ask ended) tells the person nothing.
func TestJournaledClickReplayedAtStart(t *testing.T) {
	r := newRig(t)
	mem := r.store
	fs := &failStore{Store: mem}
	r.store = fs
	path := filepath.Join(t.TempDir(), "db-acks")
	j := r.openJournal(path)
	b, stop := r.start()
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{yesNo("a")}}})
	if err != nil {
		t.Fatal(err)
	}
	fs.armed.Store(true)
	p := r.fake.Person(alice)
	if _, err := p.Select(r.ctx(), chanID, ask.TS, selectFinder(0), "no"); err != nil {
		t.Fatalf("the select was not acked: %v", err)
	}
	r.waitFor("the store refused the write", func() bool { return fs.fails.Load() == 1 })
	stop()
	if n := j.Outstanding(); n != 1 {
		t.Fatalf("%d entries outstanding after the failed write, want 1", n)
	}
	if rec, _ := mem.Get(context.Background(), ask.ID); rec.Status != interaction.StatusPending {
		t.Fatalf("status %s before the replay, want pending", rec.Status)
	}
	_ = j.Close()

	// The next start, on the same store, whose write of the replayed act
	// is held: no connection opens before the replay is done.
	j = r.openJournal(path)
	if len(r.replay) != 1 || !strings.Contains(string(r.replay[0].Data), `"block_actions"`) {
		t.Fatalf("Open returned %d entries to replay, want the select", len(r.replay))
	}
	again := r.replay
	gs := &gateStore{Store: mem, entered: make(chan struct{}), release: make(chan struct{})}
	gs.armed.Store(true)
	r.store = gs
	t.Cleanup(gs.open)
	r.waitFor("the first bot's connection is gone", func() bool { return r.fake.Connections() == 0 })
	second := r.wire()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = second.bot.Run(ctx, second.Service) }()
	defer func() { gs.open(); cancel(); <-ran }() // a failing test must not leave the act held
	<-gs.entered
	// Nothing can happen while the act is held: a Run that did not wait
	// for it would connect within milliseconds, so half a second without
	// a connection stands for never.
	wctx, wcancel := context.WithTimeout(r.ctx(), 500*time.Millisecond)
	err = r.fake.WaitConnected(wctx, 1)
	wcancel()
	if err == nil {
		t.Fatal("a connection opened while the replayed act was held")
	}
	gs.open()
	if err := r.fake.WaitConnected(r.ctx(), 1); err != nil {
		t.Fatal("no connection after the replay")
	}
	// Connected: the replay is done, its act stored.
	if rec, _ := mem.Get(context.Background(), ask.ID); rec.Status != interaction.StatusAnswered || rec.Answer == nil ||
		len(rec.Answer.Answers) != 1 || strings.Join(rec.Answer.Answers[0].Selected, ",") != "no" {
		t.Fatalf("connected before the replayed select was applied: %s %+v", rec.Status, rec.Answer)
	}
	if n := j.Outstanding(); n != 0 {
		t.Fatalf("%d entries outstanding once connected, want 0", n)
	}
	cancel()
	<-ran
	_ = j.Close()
	r.store = mem

	// The same click replayed again, as by a start whose predecessor
	// died before marking it done: refused (the ask ended), silently.
	other := filepath.Join(t.TempDir(), "other-acks")
	j = r.openJournal(other)
	if _, err := j.Append(again[0].Data); err != nil {
		t.Fatal(err)
	}
	_ = j.Close()
	j = r.openJournal(other)
	before := len(r.fake.Ephemerals(alice))
	_, stop = r.start()
	r.waitFor("the second replay settles", func() bool { return j.Outstanding() == 0 })
	stop() // Run returns once every handler (and so any ephemeral) is done
	if n := len(r.fake.Ephemerals(alice)); n != before {
		t.Fatalf("%d ephemerals for a refused replay, want none", n-before)
	}
}

// A click acked on one connection is routed after every click acked before
// it on another (issue 14): the reader of the person's first choice is held
// right after its ack while their next choice arrives on the other
// connection, is acked and routed; the question keeps the later choice.
// Routed after its ack, the held click would come second and undo it.
func TestJournaledClicksRouteInAckOrderAcrossConnections(t *testing.T) {
	r := newRig(t)
	r.conns = 2
	r.openJournal(filepath.Join(t.TempDir(), "db-acks"))
	held, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	let := sync.OnceFunc(func() { close(release) })
	t.Cleanup(let)
	b, _ := r.startHooked(func(b *running) {
		for _, s := range b.bot.sockets {
			s.afterJournaledAck = func() {
				if first.CompareAndSwap(false, true) {
					close(held)
					<-release
				}
			}
		}
	})
	if err := r.fake.WaitConnected(r.ctx(), 2); err != nil {
		t.Fatal(err)
	}
	r.waitFor("two sockets up", func() bool { return b.bot.Connected() == 2 })
	ask, err := b.Create(r.ctx(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	p := r.fake.Person(alice)
	if _, err := p.Select(r.ctx(), chanID, ask.TS, selectFinder(0), "yes"); err != nil {
		t.Fatal(err)
	}
	<-held // acked, its reader held
	if _, err := p.Select(r.ctx(), chanID, ask.TS, selectFinder(0), "no"); err != nil {
		t.Fatalf("the next choice, on the other connection: %v", err)
	}
	r.waitFor("the later choice stored", func() bool {
		rec, _ := r.store.Get(context.Background(), ask.ID)
		return len(rec.Progress) > 0 && slices.Equal(rec.Progress[0].Selected, []string{"no"})
	})
	let()
	r.sentinel(ask, 1)
	rec, err := r.store.Get(context.Background(), ask.ID)
	if err != nil || len(rec.Progress) == 0 || !slices.Equal(rec.Progress[0].Selected, []string{"no"}) {
		t.Fatalf("question 1 holds %+v (%v), want the later choice \"no\"", rec.Progress, err)
	}
}
