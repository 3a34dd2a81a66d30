//go:build unix

package flock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A second open file cannot take the lock while the first holds it, and
// can once the first is closed.
func TestLockRefusesASecondOpenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	first, second := open(), open()
	defer second.Close()
	if err := Lock(first); err != nil {
		t.Fatal(err)
	}
	if err := Lock(second); !errors.Is(err, ErrHeld) {
		t.Fatalf("second Lock = %v, want ErrHeld", err)
	}
	_ = first.Close()
	if err := Lock(second); err != nil {
		t.Fatalf("Lock after the first closed = %v", err)
	}
}
