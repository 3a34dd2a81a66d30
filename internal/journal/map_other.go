//go:build !unix

package journal

import (
	"errors"
	"os"
)

// mapFile is unix-only: elsewhere the journal writes with pwrite(2).
func mapFile(*os.File, int) ([]byte, error) { return nil, errors.ErrUnsupported }

func unmapFile([]byte) error { return nil }
