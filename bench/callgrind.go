package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slackask/slackask/internal/slackfake"
)

// cgResult is one target's instruction count per envelope under valgrind
// --tool=callgrind: the target is started, handed one envelope, and its
// count dumped (start-up, connecting, recovery and the first envelope's
// one-time work); then it is handed N more and the count since that dump
// is divided by N.
type cgResult struct {
	Target string
	N      int
	// First: instructions (Ir) up to and with the first envelope; Long:
	// those of the N envelopes after it; one per repetition.
	First, Long []uint64
	PerEnvelope []float64
	// Asks created through the HTTP API after the envelopes, one at a
	// time (slackask builds), and the instructions per ask.
	Asks   int
	PerAsk []float64
	Took   time.Duration
}

// callgrindAvailable reports whether valgrind can be run.
func callgrindAvailable() bool {
	_, err := exec.LookPath("valgrind")
	return err == nil
}

// callgrindBench counts the instructions each target executes per
// envelope. The target runs under callgrind as its own process; the fake
// (in this process, not counted) sends it captured block_actions
// envelopes one at a time, each after the previous one's ack, so that
// nothing in the count depends on the machine's speed or load: the
// count is the same on a busy machine, only slower to get.
//
// Go programs run with GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off:
// callgrind aborts on the signals of the Go scheduler's asynchronous
// preemption, and valgrind 3.19 cannot decode RDTSCP, which the runtime's
// cputicks uses on CPUs that have it.
func (r *rig) callgrindBench(ctx context.Context, targets []string) ([]cgResult, error) {
	fake, err := newFake(slackfake.Config{AckTimeout: 10 * time.Minute, PingInterval: time.Hour})
	if err != nil {
		return nil, err
	}
	defer fake.Close()
	dbs := map[string]string{}
	payloads := map[string][]json.RawMessage{}
	for _, t := range append([]string{targetSlackask}, targets...) {
		if !isSlackask(t) || dbs[t] != "" {
			continue
		}
		dbs[t] = filepath.Join(r.dir, "cg-"+t+".db")
		defer removeDB(dbs[t])
		if payloads[t], err = r.ackSetup(ctx, fake, dbs[t], t); err != nil {
			return nil, fmt.Errorf("callgrind setup (%s): %w", t, err)
		}
	}
	var (
		out  []cgResult
		errs []error
	)
	for _, t := range targets {
		if t == targetBolt {
			continue // node's JIT would count its own compilation
		}
		pl := payloads[t]
		if pl == nil {
			pl = payloads[targetSlackask]
		}
		res := cgResult{Target: t, N: r.cfg.cgN}
		start := time.Now()
		for rep := range r.cfg.cgReps {
			first, long, asks, err := r.callgrindRun(ctx, fake, t, dbs[t], pl, r.cfg.cgN, rep)
			if err != nil {
				// The other repetitions and clients still count.
				errs = append(errs, fmt.Errorf("callgrind %s, repetition %d: %w", t, rep+1, err))
				if ctx.Err() != nil {
					break
				}
				continue
			}
			per := float64(long) / float64(r.cfg.cgN)
			res.First, res.Long, res.PerEnvelope = append(res.First, first), append(res.Long, long), append(res.PerEnvelope, per)
			r.logf("  callgrind %-12s start-up and 1 envelope %d Ir, %d envelopes after it %d Ir: %.0f instructions per envelope", t, first, r.cfg.cgN, long, per)
			if isSlackask(t) && r.cfg.cgAsks > 0 {
				res.Asks = r.cfg.cgAsks
				res.PerAsk = append(res.PerAsk, float64(asks)/float64(r.cfg.cgAsks))
				r.logf("  callgrind %-12s %d asks created after them %d Ir: %.0f instructions per ask", t, r.cfg.cgAsks, asks, float64(asks)/float64(r.cfg.cgAsks))
			}
		}
		res.Took = time.Since(start)
		if len(res.PerEnvelope) > 0 {
			out = append(out, res)
		}
	}
	return out, errors.Join(errs...)
}

// callgrindRun runs target under callgrind, sends it one envelope, dumps
// the count, sends n more one after another, dumps again, then (a
// slackask build) creates cgAsks asks one after another through its HTTP
// API and dumps again, kills it and returns the three counts. A slackask build runs on a copy of db, so that
// every run starts from the same database.
func (r *rig) callgrindRun(ctx context.Context, fake *slackfake.Server, target, db string, payloads []json.RawMessage, n, rep int) (first, rest, asks uint64, err error) {
	outFile := filepath.Join(r.dir, fmt.Sprintf("callgrind.%s.%d.out", target, rep))
	defer func() {
		for _, f := range []string{outFile, outFile + ".log", outFile + ".1", outFile + ".2", outFile + ".3"} {
			_ = os.Remove(f)
		}
	}()
	wrap := []string{"env", "GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off", "valgrind", "--tool=callgrind", "--callgrind-out-file=" + outFile, "--log-file=" + outFile + ".log"}
	if db != "" {
		runDB := filepath.Join(r.dir, fmt.Sprintf("cg-run-%s.db", target))
		removeDB(runDB)
		defer removeDB(runDB)
		for _, suffix := range []string{"", "-wal"} {
			if err := copyFile(db+suffix, runDB+suffix); err != nil && !os.IsNotExist(err) {
				return 0, 0, 0, err
			}
		}
		db = runDB
	}
	p, err := r.startTarget(fake, target, db, wrap...)
	if err != nil {
		return 0, 0, 0, err
	}
	defer func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		_ = waitConnections(context.Background(), fake, 0, 30*time.Second)
		if err != nil {
			vlog, _ := os.ReadFile(outFile + ".log")
			err = fmt.Errorf("%w\n%s\nvalgrind: %s", err, p.tailText(), vlog)
		}
	}()
	// No request to the target before the load: under callgrind each one
	// would count, and how many a readiness poll makes depends on time.
	if err := waitConnections(ctx, fake, 1, 5*time.Minute); err != nil {
		return 0, 0, 0, err
	}
	waitIdle(p.cmd.Process.Pid, 0)
	deliver := func(from, to int) error {
		for i := from; i < to; i++ {
			dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			_, err := fake.Deliver(dctx, payloads[i%len(payloads)])
			cancel()
			if err != nil {
				return fmt.Errorf("envelope %d: %w", i, err)
			}
		}
		waitIdle(p.cmd.Process.Pid, 0)
		return nil
	}
	// A dump goes through callgrind_control and holds the counts since
	// the previous one; the process is killed at the end because a
	// signal the Go runtime handles (SIGINT, SIGTERM) aborts callgrind.
	dump := func(k int) (uint64, error) {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if msg, err := exec.CommandContext(cctx, "callgrind_control", "--dump", strconv.Itoa(p.cmd.Process.Pid)).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("callgrind_control --dump: %v: %s", err, msg)
		}
		return callgrindTotal(fmt.Sprintf("%s.%d", outFile, k))
	}
	if err := deliver(0, 1); err != nil {
		return 0, 0, 0, err
	}
	if first, err = dump(1); err != nil {
		return 0, 0, 0, err
	}
	if err := deliver(1, 1+n); err != nil {
		return 0, 0, 0, err
	}
	if rest, err = dump(2); err != nil {
		return 0, 0, 0, err
	}
	if isSlackask(target) && r.cfg.cgAsks > 0 {
		a := newAPI(p.base, 1)
		defer a.close()
		if _, _, err := createAsks(ctx, a, r.cfg.cgAsks, 1, typicalAsk); err != nil {
			return 0, 0, 0, fmt.Errorf("creating asks: %w", err)
		}
		waitIdle(p.cmd.Process.Pid, 0)
		if asks, err = dump(3); err != nil {
			return 0, 0, 0, err
		}
	}
	if r.cfg.keepCallgrind != "" {
		// For callgrind_annotate or kcachegrind. Their split by function
		// is not to be trusted for Go: goroutine stack switches confuse
		// callgrind's call tracking (self costs that sum past the total).
		_ = copyFile(outFile+".2", filepath.Join(r.cfg.keepCallgrind, fmt.Sprintf("callgrind.%s.%d.out", target, rep)))
	}
	return first, rest, asks, nil
}

// callgrindTotal reads the instruction count (the "summary:" or
// "totals:" line) of a callgrind output file.
func callgrindTotal(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("callgrind output: %w", err)
	}
	defer f.Close()
	return parseCallgrindTotal(f)
}

func parseCallgrindTotal(rd io.Reader) (uint64, error) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, key := range []string{"summary:", "totals:"} {
			if v, ok := strings.CutPrefix(line, key); ok {
				f := strings.Fields(v)
				if len(f) == 0 {
					continue
				}
				return strconv.ParseUint(f[0], 10, 64)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("callgrind output without a summary line")
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
