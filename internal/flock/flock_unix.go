//go:build unix

package flock

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Lock takes an exclusive, non-blocking flock on f. Closing f releases it,
// and so does the death of the process. It fails with ErrHeld when another
// open file holds the lock.
func Lock(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return ErrHeld
		}
		return fmt.Errorf("flock %s: %w", f.Name(), err)
	}
	return nil
}
