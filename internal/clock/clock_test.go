package clock

import (
	"testing"
	"time"
)

func TestFake(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	ch := f.After(time.Minute)
	select {
	case <-ch:
		t.Fatal("fired early")
	default:
	}
	f.Advance(59 * time.Second)
	select {
	case <-ch:
		t.Fatal("fired early")
	default:
	}
	f.Advance(time.Second)
	if got := <-ch; !got.Equal(start.Add(time.Minute)) {
		t.Fatalf("fired at %v", got)
	}
	if f.Waiters() != 0 {
		t.Fatal("waiter kept")
	}
	if v := <-f.After(0); !v.Equal(f.Now()) {
		t.Fatal("After(0) did not fire at once")
	}
}
