package proccpu

import (
	"os"
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
