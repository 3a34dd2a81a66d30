//go:build unix

package journal

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lock takes an exclusive, non-blocking flock on f, as store/sqlite does
// on its database's lock file: closing f releases it, and so does the
// process's death. A lock another open file holds (flock is per open
// file, so a second Open in this process counts) fails with ErrLocked.
func lock(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("%w (flock on %s); it belongs to the process that has the SQLite database next to it", ErrLocked, f.Name())
		}
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}
