//go:build !unix

package journal

import "os"

// lock takes no lock: without flock, refusing a second process is left to
// unix builds (and to the SQLite store's own lock, taken before the
// journal is opened).
func lock(*os.File) error { return nil }
