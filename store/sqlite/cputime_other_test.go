//go:build !unix

package sqlite

import "time"

// cpuTime is not measured on this system: the CPU metric reads 0.
func cpuTime() time.Duration { return 0 }
