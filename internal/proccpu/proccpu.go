// Package proccpu reads how much CPU a process has used, for the
// benchmarks that sum CPU over several processes (slackask replicas and
// the PostgreSQL backends serving them).
package proccpu

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Of is the user and system CPU time process pid has used so far (pid 0:
// this process), from /proc/PID/stat in clock ticks of 10 ms; 0 when it
// cannot be read.
func Of(pid int) time.Duration {
	path := "/proc/self/stat"
	if pid > 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	s := string(raw)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
