package backoff

import (
	"testing"
	"time"
)

func TestZeroValueDoublesToMax(t *testing.T) {
	b := Backoff{Jitter: -1}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30}
	for i, w := range want {
		if got := b.Next(); got != w*time.Second {
			t.Fatalf("pause %d = %v, want %v", i, got, w*time.Second)
		}
	}
	if b.Attempts() != len(want) {
		t.Fatalf("Attempts = %d, want %d", b.Attempts(), len(want))
	}
	b.Reset()
	if got := b.Next(); got != time.Second {
		t.Fatalf("after Reset: %v, want 1s", got)
	}
}

func TestJitterStaysInBounds(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: 100 * time.Millisecond}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := b.Next()
		if d < 80*time.Millisecond || d > 120*time.Millisecond {
			t.Fatalf("pause %v outside 100ms ±20%%", d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Fatal("no jitter: every pause was the same")
	}
}

func TestMaxBelowMinUsesMin(t *testing.T) {
	b := Backoff{Min: time.Second, Max: time.Millisecond, Jitter: -1}
	if got := b.Next(); got != time.Second {
		t.Fatalf("got %v, want 1s", got)
	}
}
