//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrLocked: another Store, in this process or another, has the file open.
var ErrLocked = errors.New("the database file is in use by another process")

// lockFile takes an exclusive, non-blocking flock on abs+".lock" and
// returns the open lock file; closing it releases the lock, and so does the
// process's death. A lock another open file holds (the flock is per open
// file, so a second Open in this process counts) fails with ErrLocked.
func lockFile(abs string) (*os.File, error) {
	name := abs + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			// Open names the file in front of this message.
			return nil, fmt.Errorf("%w (it holds %s); SQLite serves one process: to run several replicas, use PostgreSQL (SLACKASK_DATABASE=postgres://…)",
				ErrLocked, name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return f, nil
}
