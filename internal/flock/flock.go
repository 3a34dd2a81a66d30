// Package flock takes the exclusive advisory lock by which a file refuses
// a second user: the SQLite store's lock file and the journal next to it
// each hold one for as long as they are open.
package flock

import "errors"

// ErrHeld: another open file, in this process or another, holds the lock
// (flock is per open file, so a second open in the same process counts).
var ErrHeld = errors.New("locked by another open file")
