//go:build !unix

package flock

import "os"

// Lock takes no lock: without flock, refusing a second user is left to
// unix builds.
func Lock(*os.File) error { return nil }
