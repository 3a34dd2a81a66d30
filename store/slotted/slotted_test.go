package slotted

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/workslots"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
)

// slottedStore passes every call through, and a call whose context ends
// while it waits for a slot returns the context's error without running.
func TestSlottedStore(t *testing.T) {
	ctx := context.Background()
	w := make(workslots.Slots, 1)
	s := New(memory.New(), w)
	rec := store.Record{Ask: interaction.Ask{ID: "a1", Status: interaction.StatusPending, CreatedAt: time.Now()}}
	if _, _, err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "a1", func(r *store.Record) error { r.TS = "1.2"; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "a1"); err != nil || got.TS != "1.2" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if got, err := s.Pending(ctx); err != nil || len(got) != 1 {
		t.Fatalf("Pending = %d, %v", len(got), err)
	}
	if got, err := s.List(ctx, store.Filter{}); err != nil || len(got) != 1 {
		t.Fatalf("List = %d, %v", len(got), err)
	}
	if n, err := s.Prune(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if len(w) != 0 {
		t.Fatal("a slot was not released")
	}
	w <- struct{}{} // all slots taken
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	ran := false
	if _, err := s.Update(short, "a1", func(*store.Record) error { ran = true; return nil }); err == nil || ran {
		t.Fatalf("Update without a slot: err %v, ran %v", err, ran)
	}
}

// batchingStore is a memory store that is a store.Batcher: each batch
// runs its ops one by one and is recorded.
type batchingStore struct {
	store.Store
	mu      sync.Mutex
	batches [][]string // the ids of each batch
}

func (b *batchingStore) UpdateBatch(ops []*store.UpdateOp) {
	var ids []string
	for _, op := range ops {
		ids = append(ids, op.ID)
		op.Rec, op.Err = b.Store.Update(op.Ctx, op.ID, op.Fn)
	}
	b.mu.Lock()
	b.batches = append(b.batches, ids)
	b.mu.Unlock()
}

// Updates that wait for a slot of a Batcher's store run as one batch, in
// the order they came, each with its own result; one whose context ends
// while it waits leaves the queue without running.
func TestSlottedStoreBatchesWaitingUpdates(t *testing.T) {
	ctx := context.Background()
	w := make(workslots.Slots, 1)
	bs := &batchingStore{Store: memory.New()}
	s := New(bs, w).(*slottedStore)
	for _, id := range []string{"a", "b"} {
		if _, _, err := s.Create(ctx, store.Record{Ask: interaction.Ask{ID: id, Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
			t.Fatal(err)
		}
	}
	queued := func(n int) {
		for {
			s.mu.Lock()
			k := len(s.queued)
			s.mu.Unlock()
			if k == n {
				return
			}
			runtime.Gosched()
		}
	}
	w <- struct{}{} // the slot is busy: Updates queue
	var wg sync.WaitGroup
	errs := make([]error, 4)
	revs := make([]int, 4)
	update := func(i int, ctx context.Context, id string, fn func(*store.Record) error) {
		wg.Go(func() {
			rec, err := s.Update(ctx, id, fn)
			revs[i], errs[i] = rec.Rev, err
		})
	}
	bump := func(r *store.Record) error { r.Rev++; return nil }
	errFn := errors.New("refused")
	update(0, ctx, "a", bump)
	queued(1)
	gone, cancel := context.WithCancel(ctx)
	update(1, gone, "b", bump)
	queued(2)
	update(2, ctx, "b", func(*store.Record) error { return errFn })
	queued(3)
	update(3, ctx, "a", bump)
	queued(4)
	cancel()
	queued(3) // the cancelled one left
	w.Release()
	wg.Wait()
	if want := [][]string{{"a", "b", "a"}}; !slices.EqualFunc(bs.batches, want, slices.Equal) {
		t.Fatalf("batches %v, want %v", bs.batches, want)
	}
	for i, want := range []error{nil, context.Canceled, errFn, nil} {
		if !errors.Is(errs[i], want) {
			t.Errorf("update %d: %v, want %v", i, errs[i], want)
		}
	}
	if revs[0] != 1 || revs[3] != 2 {
		t.Fatalf("revs %v: the second update of a should see the first", revs)
	}
	if b, _ := s.Get(ctx, "b"); b.Rev != 0 {
		t.Fatalf("b changed by a cancelled or refused update: Rev %d", b.Rev)
	}
	if len(w) != 0 {
		t.Fatal("a slot was not released")
	}
}

// Under concurrent load the slot's winner lingers so that Updates arriving
// meanwhile share its batch; one caller's Updates in sequence never wait,
// nor do any once no batch of two has run for crowdWindow.
func TestSlottedStoreLingersUnderLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := make(workslots.Slots, 1)
		bs := &batchingStore{Store: memory.New()}
		s := New(bs, w)
		for _, id := range []string{"a", "b", "c"} {
			if _, _, err := s.Create(ctx, store.Record{Ask: interaction.Ask{ID: id, Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
				t.Fatal(err)
			}
		}
		bump := func(r *store.Record) error { r.Rev++; return nil }
		// took runs an Update of id and returns how long it took.
		took := func(id string) time.Duration {
			start := time.Now()
			if _, err := s.Update(ctx, id, bump); err != nil {
				t.Error(err)
			}
			return time.Since(start)
		}
		// One caller in sequence, a millisecond apart: never a wait.
		for _, id := range []string{"a", "b", "a", "b"} {
			if d := took(id); d != 0 {
				t.Fatalf("an update in sequence took %v", d)
			}
			time.Sleep(time.Millisecond)
		}
		// A crowd: two Updates queue behind a busy slot and run as one
		// batch.
		var wg sync.WaitGroup
		w <- struct{}{}
		wg.Go(func() { took("a") })
		wg.Go(func() { took("b") })
		synctest.Wait()
		w.Release()
		wg.Wait()
		// Right after it, an Update lingers, and one that comes 100 µs
		// later joins it.
		var lingered time.Duration
		wg.Go(func() { lingered = took("a") })
		wg.Go(func() {
			time.Sleep(100 * time.Microsecond)
			took("c")
		})
		wg.Wait()
		if lingered != linger {
			t.Fatalf("the update under load took %v, want the linger %v", lingered, linger)
		}
		n := len(bs.batches)
		if got := bs.batches[n-1]; !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("the lingering batch ran %v, want [a c]", got)
		}
		// Without another crowd, the wait stops after crowdWindow.
		start := time.Now()
		for time.Since(start) < crowdWindow {
			if d := took("b"); d != linger && d != 0 {
				t.Fatalf("an update took %v", d)
			}
			time.Sleep(time.Millisecond)
		}
		if d := took("b"); d != 0 {
			t.Fatalf("an update %v after the last crowd took %v", time.Since(start), d)
		}
	})
}
