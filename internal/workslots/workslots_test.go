package workslots

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
)

func TestWorkSlotsLeaveAProcessorFree(t *testing.T) {
	w := New()
	if want := max(1, runtime.GOMAXPROCS(0)-1); cap(w) != want {
		t.Fatalf("%d slots, want %d", cap(w), want)
	}
	ctx := context.Background()
	for range cap(w) {
		if !w.Acquire(ctx) {
			t.Fatal("acquire failed with slots free")
		}
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if w.Acquire(short) {
		t.Fatal("acquired a slot beyond the bound")
	}
	w.Release()
	if !w.Acquire(ctx) {
		t.Fatal("acquire after release failed")
	}
}

// slottedStore passes every call through, and a call whose context ends
// while it waits for a slot returns the context's error without running.
func TestSlottedStore(t *testing.T) {
	ctx := context.Background()
	w := make(Slots, 1)
	s := slottedStore{Store: memory.New(), slots: w}
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
