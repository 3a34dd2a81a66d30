package sqlite

import (
	"errors"
	"fmt"
	"os"

	"github.com/slackask/slackask/internal/flock"
)

// ErrLocked: another Store, in this process or another, has the file open.
var ErrLocked = errors.New("the database file is in use by another process")

// lockFile takes an exclusive flock on abs+".lock" (internal/flock; no
// lock without flock, where SQLite's own locking keeps the file
// consistent) and returns the open lock file; closing it releases the
// lock, and so does the process's death. A lock another open file holds
// (a second Open in this process counts) fails with ErrLocked.
func lockFile(abs string) (*os.File, error) {
	name := abs + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := flock.Lock(f); err != nil {
		_ = f.Close()
		if errors.Is(err, flock.ErrHeld) {
			// Open names the file in front of this message.
			return nil, fmt.Errorf("%w (it holds %s); SQLite serves one process: to run several replicas, use PostgreSQL (SLACKASK_DATABASE=postgres://…)",
				ErrLocked, name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return f, nil
}
