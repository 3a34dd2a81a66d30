package proccpu

import (
	"os"
	"strconv"
	"testing"
	"time"
)

func TestOfGrowsWithWork(t *testing.T) {
	// Spin until the count moves on (a tick, where schedstat is missing).
	checkGrows(t, "CPU", "stat", Of, func() {})
}

func TestSwitchesGrowWithWaits(t *testing.T) {
	// Each sleep leaves the CPU: the count must grow.
	checkGrows(t, "switches", "task", Switches, func() { time.Sleep(time.Millisecond) })
}

// checkGrows checks that read of this process (as pid 0, then by its pid)
// grows while step is repeated, within 10 s, and is 0 for a process that
// cannot exist; it skips where /proc/self/file is missing.
func checkGrows[T ~int64](t *testing.T, what, file string, read func(pid int) T, step func()) {
	t.Helper()
	if _, err := os.Stat("/proc/self/" + file); err != nil {
		t.Skip("no /proc here")
	}
	before := read(0)
	for deadline := time.Now().Add(10 * time.Second); read(os.Getpid()) <= before; step() {
		if time.Now().After(deadline) {
			t.Fatalf("%s stayed at %v for 10 s", what, before)
		}
	}
	if got := read(1 << 30); got != 0 {
		t.Fatalf("a process that cannot exist has %v of %s", got, what)
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
