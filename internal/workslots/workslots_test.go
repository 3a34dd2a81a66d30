package workslots

import (
	"context"
	"runtime"
	"testing"
	"time"
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
