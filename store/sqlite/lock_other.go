//go:build !unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked: another Store, in this process or another, has the file open.
var ErrLocked = errors.New("the database file is in use by another process")

// lockFile opens abs+".lock" but takes no lock: without flock, refusing a
// second process is left to unix builds, and here SQLite's own locking
// keeps the file consistent.
func lockFile(abs string) (*os.File, error) {
	f, err := os.OpenFile(abs+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	return f, nil
}
