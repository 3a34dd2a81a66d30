// Package proccpu reads how much CPU a process has used, for the
// benchmarks that sum CPU over several processes (slackask replicas and
// the PostgreSQL backends serving them).
package proccpu

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Of is the user and system CPU time process pid has used so far (pid 0:
// this process), from /proc/PID/stat in clock ticks of 10 ms; 0 when it
// cannot be read.
func Of(pid int) time.Duration {
	raw, err := os.ReadFile(procPath(pid, "stat"))
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

// Switches is how many times the threads of process pid (0: this process)
// have been switched off a CPU so far, voluntarily (waiting) or not,
// summed over /proc/PID/task/*/status; threads that have exited are not
// counted. 0 when it cannot be read.
func Switches(pid int) int64 {
	dir := procPath(pid, "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, t := range tasks {
		raw, err := os.ReadFile(filepath.Join(dir, t.Name(), "status"))
		if err != nil {
			continue // exited meanwhile
		}
		for line := range strings.Lines(string(raw)) {
			k, v, ok := strings.Cut(line, ":")
			if ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
				c, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				n += c
			}
		}
	}
	return n
}

// procPath is /proc/PID/name, /proc/self/name for pid 0.
func procPath(pid int, name string) string {
	if pid > 0 {
		return fmt.Sprintf("/proc/%d/%s", pid, name)
	}
	return "/proc/self/" + name
}
