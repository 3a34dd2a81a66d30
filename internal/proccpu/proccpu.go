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

// Of is the CPU time process pid (0: this process) has used so far, user
// and system: the sum over its threads of the scheduler's nanosecond
// count (/proc/PID/task/*/schedstat), so that a phase of a few hundred
// operations reads to the microsecond. Threads that have exited are not
// counted (Go's and PostgreSQL's processes keep theirs). Where schedstat
// cannot be read it falls back to /proc/PID/stat, in ticks of 10 ms; 0
// when neither can be read.
func Of(pid int) time.Duration {
	if d, ok := scheduled(pid); ok {
		return d
	}
	return ticks(pid)
}

// scheduled sums the first field of /proc/PID/task/*/schedstat, the
// nanoseconds each thread has run.
func scheduled(pid int) (time.Duration, bool) {
	dir := procPath(pid, "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	var sum int64
	read := false
	for _, t := range tasks {
		raw, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue // exited meanwhile, or no schedstat in this kernel
		}
		f := strings.Fields(string(raw))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		sum, read = sum+ns, true
	}
	return time.Duration(sum), read
}

// ticks is utime+stime from /proc/PID/stat, in clock ticks of 10 ms.
func ticks(pid int) time.Duration {
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
