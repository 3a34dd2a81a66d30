package proccpu

import (
	"os"
	"strconv"
	"testing"
	"time"
)

func TestOfGrowsWithWork(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	before := Of(0)
	// Spin until the kernel has counted at least one more tick.
	for deadline := time.Now().Add(10 * time.Second); Of(os.Getpid()) <= before; {
		if time.Now().After(deadline) {
			t.Fatalf("CPU stayed at %v after 10 s of work", before)
		}
	}
	if got := Of(1 << 30); got != 0 {
		t.Fatalf("a process that cannot exist has %v of CPU", got)
	}
}

func TestSwitchesGrowWithWaits(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc here")
	}
	before := Switches(0)
	// Each sleep leaves the CPU: the count must grow.
	for deadline := time.Now().Add(10 * time.Second); Switches(os.Getpid()) <= before; {
		if time.Now().After(deadline) {
			t.Fatalf("switches stayed at %d over 10 s of sleeps", before)
		}
		time.Sleep(time.Millisecond)
	}
	if got := Switches(1 << 30); got != 0 {
		t.Fatalf("a process that cannot exist has %d switches", got)
	}
}

// Of reads finer than the 10 ms tick where schedstat is there, and agrees
// with the tick count /proc/PID/stat keeps.
func TestOfIsFineAndAgreesWithTicks(t *testing.T) {
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/schedstat"); err != nil {
		t.Skip("no schedstat here")
	}
	d, ok := scheduled(0)
	if !ok || d <= 0 {
		t.Fatalf("scheduled(0) = %v, %v", d, ok)
	}
	// Spin for 50 ms of CPU, then compare the two counts of it.
	for start := Of(0); Of(0)-start < 50*time.Millisecond; {
	}
	fine, coarse := Of(0), ticks(0)
	if fine%(10*time.Millisecond) == 0 {
		t.Fatalf("Of = %v: a whole number of ticks, as if schedstat were not read", fine)
	}
	// The tick count samples the same time: within a few ticks of it.
	if diff := (fine - coarse).Abs(); diff > 100*time.Millisecond {
		t.Fatalf("Of = %v, ticks = %v: %v apart", fine, coarse, diff)
	}
}
