// Command bench measures slackask against the Slack fake
// (internal/slackfake) and prints the results as Markdown. Its parts:
//
//	capacity   the highest envelope rate each client (slackask, Bolt for
//	           JavaScript in bench/bolt, bare slack-go in bench/floor, the
//	           read-and-ack-only bench/wire) sustains with ack p99 under
//	           100 ms, a step search; CPU per envelope (/proc/PID/stat) and
//	           ack p50 against wire's at every step
//	ab         this tree against BENCH_OLD_BIN in one run, alternating: ack
//	           at 100 and 1,000/s, answer latency, RSS with 10,000 pending asks
//	ab-scale   the A/B's scale levels alone (RSS with 10,000 pending asks)
//	callgrind  instructions per envelope of each client under valgrind
//	           --tool=callgrind (needs valgrind)
//	scale      pending asks, long polls, memory, goroutines, restart time
//	economy    Slack API calls per ask
//	ratelimit  200 asks at once to rate-limited channels
//	ack        ack latency at fixed rates (BENCH_RATES), all four clients
//	           (not in the default run)
//
// Run it from the repository:
//
//	make bench                                      # npm install for Bolt, then go run ./bench
//	make bench BENCH_OLD_BIN=/path/to/old/slackask  # with the A/B
//	BENCH_QUICK=1 go run ./bench                    # smoke run, about a minute
//	BENCH_ONLY=callgrind go run ./bench             # instruction counts only
//
// Environment:
//
//	BENCH_QUICK=1         small sizes, one repetition
//	BENCH_ONLY=a,b        only these parts (default: all but ack)
//	BENCH_TARGETS=a,b     only these clients: slackask, floor, bolt, wire (capacity,
//	                      ack, callgrind; add slackask-old for callgrind)
//	BENCH_REPS=N          repetitions of capacity and ack (3)
//	BENCH_CAP_RATES=a,b   capacity steps (250,…,4000), BENCH_CAP_SECONDS=N load per step (3)
//	BENCH_OLD_BIN=F       the slackask build to compare with (ab, callgrind)
//	BENCH_AB_RATES=a,b    A/B ack rates (100,1000), BENCH_AB_LEVEL=N pending asks (10000),
//	                      BENCH_AB_SCALE_REPS=N scale levels per build (1),
//	                      BENCH_AB_SLICES=N turns per build and rate (60),
//	                      BENCH_AB_ROUNDS=N fresh setups of both builds (12),
//	                      BENCH_AB_SLICE_MS=N load per turn (2000),
//	                      BENCH_AB_ANSWERS=N answers per build and turn (40)
//	BENCH_CG_N=N          envelopes counted under callgrind (1000), BENCH_CG_REPS=N (1),
//	BENCH_CG_ASKS=N       asks created counted under callgrind after them (200; slackask only)
//	BENCH_RATES=a,b       ack rates (envelopes/s), BENCH_ACK_SECONDS=N per rate
//	BENCH_RL_ASKS=N, BENCH_RL_CHANNELS=N   size of the rate-limited run (200, 3)
//	BENCH_LEVELS=a,b      pending asks per scale level, BENCH_CREATE_CONC=N concurrent creates (16)
//	BENCH_SLACKASK_BIN=F  run this slackask binary instead of building ./cmd/slackask
//	BENCH_OUT=FILE        also write the report there (default bench/results/latest.md)
//	BENCH_MAX_LOAD=X      wait (up to 10 min) for the 1-minute load average to drop below X
//	BENCH_PPROF=1         build slackask with a pprof listener (go build -overlay; the
//	                      tree is untouched) and save to bench/results/: CPU profiles of
//	                      its ack loads and asks creation, heap and goroutine profiles
//	                      at each scale level, and this driver's CPU profile;
//	                      BENCH_PPROF_MEMRATE=N sets its runtime.MemProfileRate;
//	                      with BENCH_TRACE=1 also 3 s execution traces of the answer
//	                      latency run and of each ack rate (go tool trace -pprof=sched)
//
// Everything listens on 127.0.0.1 only. slackask runs as a separate
// process built from ./cmd/slackask, so its resident memory and CPU time
// are its own.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slackask/slackask/internal/clock"
)

// config sizes the benchmarks.
type config struct {
	quick        bool
	only         map[string]bool
	reps         int
	rates        []int
	ackDur       time.Duration
	warmup       time.Duration
	pause        time.Duration
	ackAsks      int
	answers      int
	levels       []int
	pollers      int
	restartAt    int
	settle       time.Duration
	ackCheckDur  time.Duration
	scaleAnswers int
	createConc   int
	economyAsks  int
	rlAsks       int
	rlChannels   int
	profileDir   string          // BENCH_PPROF: where CPU profiles of slackask go
	targets      map[string]bool // BENCH_TARGETS: ack targets to run (default all)
	// capacity search: the step rates and the load at each
	capRates []int
	capDur   time.Duration
	// A/B of the new build against BENCH_OLD_BIN: ack rates, the pending
	// asks of the scale level and its repetitions per build
	abRates     []int
	abLevel     int
	abScaleReps int
	// the A/B's latencies: turns per build and rate, the rounds they are
	// cut into, and the load of one turn (abslices.go)
	abSlices   int
	abRounds   int
	abSliceDur time.Duration
	// abAnswers: answer samples per build in each turn
	abAnswers int
	// callgrind: envelopes of the long run, repetitions
	cgN, cgReps int
	// cgAsks: asks created through the HTTP API, counted after the
	// envelopes (slackask builds only)
	cgAsks int
	// keepCallgrind: where the callgrind dumps of the N envelopes are
	// kept (bench/results when the driver runs from the repository)
	keepCallgrind string
}

func fullConfig() config {
	return config{
		reps: 3, rates: []int{100, 500, 1000, 2000}, ackDur: 6 * time.Second, warmup: time.Second, pause: 500 * time.Millisecond,
		ackAsks: 100, answers: 300,
		levels: []int{1000, 10000, 50000}, pollers: 10000, restartAt: 10000, settle: 3 * time.Second,
		ackCheckDur: 5 * time.Second, scaleAnswers: 500, createConc: 16,
		economyAsks: 20, rlAsks: 200, rlChannels: 3,
		capRates: []int{250, 500, 1000, 1500, 2000, 3000, 4000}, capDur: 3 * time.Second,
		abRates: []int{100, 1000}, abLevel: 10000, abScaleReps: 1,
		abSlices: 60, abRounds: 12, abSliceDur: 2 * time.Second, abAnswers: 40,
		cgN: 1000, cgReps: 1, cgAsks: 200,
	}
}

func quickConfig() config {
	return config{
		quick: true, reps: 1, rates: []int{100, 500}, ackDur: time.Second, warmup: 300 * time.Millisecond, pause: 200 * time.Millisecond,
		ackAsks: 20, answers: 30,
		levels: []int{200, 1000}, pollers: 500, restartAt: 1000, settle: time.Second,
		ackCheckDur: time.Second, scaleAnswers: 20, createConc: 16,
		economyAsks: 5, rlAsks: 10, rlChannels: 1,
		capRates: []int{250, 1000}, capDur: time.Second,
		abRates: []int{100, 1000}, abLevel: 1000, abScaleReps: 1,
		abSlices: 2, abRounds: 1, abSliceDur: 500 * time.Millisecond, abAnswers: 5,
		cgN: 20, cgReps: 1, cgAsks: 5,
	}
}

// defaultParts run when BENCH_ONLY is not set; "ack" (the fixed-rate
// latency table) runs only when asked for.
var defaultParts = map[string]bool{"capacity": true, "ab": true, "callgrind": true, "scale": true, "economy": true, "ratelimit": true}

func (c config) runs(part string) bool {
	if len(c.only) == 0 {
		return defaultParts[part]
	}
	return c.only[part]
}

// rig is one benchmark session.
type rig struct {
	cfg  config
	dir  string
	bins binaries
	logf func(format string, args ...any)
}

// report is everything measured.
type report struct {
	Started   time.Time
	Took      time.Duration
	Machine   machine
	LoadStart string
	LoadEnd   string
	Quick     bool
	Reps      int
	Ack       *ackResults            `json:"-"`
	AckJSON   map[string]any         `json:"Ack"`
	Capacity  *capacityResults       `json:"-"`
	CapJSON   map[string][][]capStep `json:"Capacity,omitempty"`
	AB        *abResults             `json:",omitempty"`
	ABAckJSON map[string]any         `json:"ABAck,omitempty"`
	Callgrind []cgResult             `json:",omitempty"`
	Scale     []scaleLevel           `json:",omitempty"`
	Restart   *restartResult         `json:",omitempty"`
	Economy   *economyResult         `json:",omitempty"`
	EconomyDM *dmResult              `json:",omitempty"`
	RateLimit []rateResult           `json:",omitempty"`
	Errors    []string               `json:",omitempty"`
	cfg       config
}

func main() {
	cfg := fullConfig()
	if v := os.Getenv("BENCH_QUICK"); v != "" && v != "0" {
		cfg = quickConfig()
	}
	if v := os.Getenv("BENCH_ONLY"); v != "" {
		cfg.only = map[string]bool{}
		for _, p := range strings.Split(v, ",") {
			cfg.only[strings.TrimSpace(p)] = true
		}
	}
	if v := os.Getenv("BENCH_TARGETS"); v != "" {
		cfg.targets = map[string]bool{}
		for _, t := range strings.Split(v, ",") {
			cfg.targets[strings.TrimSpace(t)] = true
		}
	}
	if v := os.Getenv("BENCH_RATES"); v != "" {
		cfg.rates = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 && n <= 20000 {
				cfg.rates = append(cfg.rates, n)
			}
		}
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_REPS")); err == nil && n > 0 && n <= 10 {
		cfg.reps = n
	}
	if v := os.Getenv("BENCH_CAP_RATES"); v != "" {
		cfg.capRates = intList(v, 20000)
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_CAP_SECONDS")); err == nil && n > 0 && n <= 60 {
		cfg.capDur = time.Duration(n) * time.Second
	}
	if v := os.Getenv("BENCH_AB_RATES"); v != "" {
		cfg.abRates = intList(v, 20000)
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_AB_LEVEL")); err == nil && n >= 0 && n <= 100000 {
		cfg.abLevel = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_AB_SCALE_REPS")); err == nil && n > 0 && n <= 10 {
		cfg.abScaleReps = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_AB_SLICES")); err == nil && n > 0 && n <= 200 {
		cfg.abSlices = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_AB_ROUNDS")); err == nil && n > 0 && n <= 50 {
		cfg.abRounds = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_AB_SLICE_MS")); err == nil && n >= 100 && n <= 60000 {
		cfg.abSliceDur = time.Duration(n) * time.Millisecond
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_AB_ANSWERS")); err == nil && n > 0 && n <= 1000 {
		cfg.abAnswers = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_CG_N")); err == nil && n > 0 && n <= 100000 {
		cfg.cgN = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_CG_REPS")); err == nil && n > 0 && n <= 10 {
		cfg.cgReps = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_CG_ASKS")); err == nil && n >= 0 && n <= 10000 {
		cfg.cgAsks = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_ACK_SECONDS")); err == nil && n > 0 && n <= 60 {
		cfg.ackDur = time.Duration(n) * time.Second
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_RL_ASKS")); err == nil && n > 3 && n <= 1000 {
		cfg.rlAsks = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_RL_CHANNELS")); err == nil && n > 0 && n <= 5 {
		cfg.rlChannels = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_CREATE_CONC")); err == nil && n > 0 && n <= 256 {
		cfg.createConc = n
	}
	if v := os.Getenv("BENCH_LEVELS"); v != "" {
		cfg.levels = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 && n <= 100000 {
				cfg.levels = append(cfg.levels, n)
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 40*time.Minute) // a hard bound on the whole run
	defer cancel()
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	rep, err := run(ctx, cfg, logf)
	if rep != nil {
		md := rep.markdown()
		fmt.Print(md)
		out := os.Getenv("BENCH_OUT")
		if out == "" && rep.bootstrapped() {
			out = filepath.Join("bench", "results", "latest.md")
		}
		if out != "" {
			_ = os.MkdirAll(filepath.Dir(out), 0o755)
			if werr := os.WriteFile(out, []byte(md), 0o644); werr != nil {
				logf("writing %s: %v", out, werr)
			}
			if raw, jerr := json.MarshalIndent(rep, "", "  "); jerr == nil {
				_ = os.WriteFile(strings.TrimSuffix(out, filepath.Ext(out))+".json", raw, 0o644)
			}
			logf("report written to %s", out)
		}
	}
	if err != nil {
		logf("bench: %v", err)
		os.Exit(1)
	}
}

// bootstrapped reports whether the working directory is the repository
// root (so that bench/results is ours to write).
func (r *report) bootstrapped() bool {
	_, err := os.Stat(filepath.Join("bench", "floor", "main.go"))
	return err == nil
}

func run(ctx context.Context, cfg config, logf func(string, ...any)) (*report, error) {
	rep := &report{Started: time.Now(), Machine: describeMachine(), Quick: cfg.quick, Reps: cfg.reps, cfg: cfg}
	if v := os.Getenv("BENCH_MAX_LOAD"); v != "" {
		if limit, err := strconv.ParseFloat(v, 64); err == nil {
			waitForLoad(ctx, limit, 10*time.Minute, logf)
		}
	}
	rep.LoadStart = loadAvg()
	logf("machine: %d CPUs (%s), %s, %s; load %s", rep.Machine.CPUs, rep.Machine.CPUModel, rep.Machine.MemTotal, rep.Machine.Go, rep.LoadStart)
	dir, err := os.MkdirTemp("", "slackask-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	logf("building ./cmd/slackask and ./bench/floor")
	bins, err := buildBinaries(dir)
	if err != nil {
		return nil, err
	}
	if os.Getenv("BENCH_PPROF") != "" {
		if bins.profiled, err = buildProfiled(bins, dir); err != nil {
			return nil, err
		}
		cfg.profileDir, _ = filepath.Abs(filepath.Join("bench", "results"))
		_ = os.MkdirAll(cfg.profileDir, 0o755)
		logf("BENCH_PPROF: slackask serves pprof; CPU profiles go to %s", cfg.profileDir)
		if f, err := os.Create(filepath.Join(cfg.profileDir, "driver.pprof")); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer func() { pprof.StopCPUProfile(); f.Close() }()
			}
		}
	}
	if rep.bootstrapped() {
		cfg.keepCallgrind, _ = filepath.Abs(filepath.Join("bench", "results"))
		_ = os.MkdirAll(cfg.keepCallgrind, 0o755)
	}
	r := &rig{cfg: cfg, dir: dir, bins: bins, logf: logf}
	defer func() { rep.Took, rep.LoadEnd = time.Since(rep.Started), loadAvg() }()

	var failMu sync.Mutex
	fail := func(part string, err error) {
		failMu.Lock()
		defer failMu.Unlock()
		logf("%s: %v", part, err)
		rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", part, err))
	}
	if cfg.runs("capacity") {
		targets := cfg.ackTargets()
		logf("capacity: rates %v, %v each, until ack p99 ≥ %v; %d repetition(s), targets %v", cfg.capRates, cfg.capDur, capacityP99, cfg.reps, targets)
		res, err := r.capacityBench(ctx, targets)
		rep.Capacity = res
		if err != nil {
			fail("capacity", err)
		}
	}
	if ctx.Err() == nil && (cfg.runs("ab") || cfg.runs("ab-scale")) {
		if bins.old == "" {
			logf("A/B: skipped (set BENCH_OLD_BIN to the build to compare with)")
		} else {
			logf("A/B: %s against %s: ack at %v/s in %d turns of %v per build, %d rounds, answers, %d pending asks", "this tree", bins.old, cfg.abRates, cfg.abSlices, cfg.abSliceDur, cfg.abRounds, cfg.abLevel)
			res, err := r.abBench(ctx, !cfg.runs("ab"))
			rep.AB = res
			if err != nil {
				fail("ab", err)
			}
		}
	}
	if ctx.Err() == nil && cfg.runs("ack") {
		targets := cfg.ackTargets()
		logf("ack latency: rates %v for %v each, %d repetition(s), targets %v", cfg.rates, cfg.ackDur, cfg.reps, targets)
		res, err := r.ackBench(ctx, ackRun{targets: targets, rates: cfg.rates, answers: true})
		rep.Ack = res
		if err != nil {
			fail("ack", err)
		}
	}
	if ctx.Err() == nil && cfg.runs("callgrind") {
		if !callgrindAvailable() {
			logf("callgrind: skipped (valgrind not installed)")
		} else {
			targets := []string{targetSlackask, targetFloor, targetWire}
			if bins.old != "" {
				targets = []string{targetSlackask, targetOld, targetFloor, targetWire}
			}
			if len(cfg.targets) > 0 {
				targets = cfg.ackTargets()
				if bins.old != "" && cfg.targets[targetOld] {
					targets = append(targets, targetOld)
				}
			}
			logf("callgrind: instructions per envelope of %v (1 and %d envelopes, %d repetition(s))", targets, 1+cfg.cgN, cfg.cgReps)
			res, err := r.callgrindBench(ctx, targets)
			rep.Callgrind = res
			if err != nil {
				fail("callgrind", err)
			}
		}
	}
	if ctx.Err() == nil && cfg.runs("economy") {
		logf("Slack API economy: %d typical flows", cfg.economyAsks)
		res, err := r.economyBench(ctx)
		rep.Economy = res
		if err != nil {
			fail("economy", err)
		}
		if ctx.Err() == nil {
			logf("Slack API economy: %d asks with notify \"dm\" to 5 people", cfg.economyAsks)
			dm, err := r.dmEconomyBench(ctx)
			rep.EconomyDM = dm
			if err != nil {
				fail("economy dm", err)
			}
		}
	}
	// The rate-limited run mostly waits (one post a second): it runs
	// alongside the scale benchmark to keep the whole run short.
	rlDone := make(chan struct{})
	if ctx.Err() == nil && cfg.runs("ratelimit") {
		logf("rate-limited posting: %d asks on each of %d channel(s) at 1 message/s (in the background)", cfg.rlAsks, cfg.rlChannels)
		go func() {
			defer close(rlDone)
			res, err := r.rateLimitBench(ctx)
			rep.RateLimit = res
			if err != nil {
				fail("ratelimit", err)
			}
			for _, c := range res {
				logf("  %s: %d asks posted in %v (minimum %v), %d created, %d failed, %d lost, %d duplicated, %d postMessage calls (%d answered 429)",
					c.Channel, c.Messages, c.Took.Round(time.Millisecond), c.Minimum, c.Created, c.Failed, c.Lost, c.Dupes, c.Attempts, c.Limited)
			}
		}()
	} else {
		close(rlDone)
	}
	if ctx.Err() == nil && cfg.runs("scale") {
		logf("scale: levels %v, %d long polls at most, restart at %d", cfg.levels, cfg.pollers, cfg.restartAt)
		lv, rr, err := r.scaleBench(ctx)
		rep.Scale, rep.Restart = lv, rr
		if err != nil {
			fail("scale", err)
		}
	}
	<-rlDone
	if rep.Ack != nil {
		rep.AckJSON = rep.Ack.jsonable()
	}
	if rep.Capacity != nil {
		rep.CapJSON = rep.Capacity.steps
	}
	if rep.AB != nil && rep.AB.Ack != nil {
		rep.ABAckJSON = rep.AB.Ack.jsonable()
	}
	if len(rep.Errors) > 0 {
		return rep, fmt.Errorf("%d part(s) failed", len(rep.Errors))
	}
	return rep, ctx.Err()
}

// intList parses a comma-separated list of positive integers up to limit.
func intList(v string, limit int) []int {
	var out []int
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 && n <= limit {
			out = append(out, n)
		}
	}
	return out
}

func waitForLoad(ctx context.Context, limit float64, d time.Duration, logf func(string, ...any)) {
	deadline := time.Now().Add(d)
	for load1() >= limit && time.Now().Before(deadline) && ctx.Err() == nil {
		logf("load %s: waiting for the 1-minute average to drop below %.2f", loadAvg(), limit)
		clock.Sleep(ctx, 15*time.Second)
	}
}
