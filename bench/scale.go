package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/internal/proccpu"
	"github.com/slackask/slackask/internal/slackfake"
)

// scaleLevel is one run of the scale benchmark.
type scaleLevel struct {
	Pending, Polled int
	CreatePerSec    float64
	CreateCPU       time.Duration // slackask's CPU time per ask created
	RSSAsksKB       int64         // the pending asks alone, no callers
	AnonAsksKB      int64         // of which anonymous memory (heap, stacks, SQLite's cache)
	RSSKB, HWMKB    int64         // after the callers settled too; peak
	RSSEarlyKB      int64         // settle (3 s) after the callers started
	RSSAfterKB      int64         // after the ack and answer loads
	Threads         int64
	Goroutines      int
	Ack             latency // envelopes at ackCheckRate while pending
	AckErrors       int
	Answer          latency
	PollsCut        int // long polls that ended before their ask did (while connecting)
}

// restartResult is the restart benchmark's outcome.
type restartResult struct {
	Pending           int
	Rows              int
	Ready, Recovered  []time.Duration // clean restarts
	CrashReady        time.Duration   // the first start after the SIGQUIT
	CrashRecovered    time.Duration
	DBBytes, WALBytes int64
	SHMBytes          int64
	BytesPerAsk       float64
	RestartAckLatency latency // envelopes right after the restart
	RestartAckErrors  int
}

const ackCheckRate = 200

// scaleBench runs each level in a fresh slackask process, database and
// fake. After the level with restartAt pending asks it also runs the
// restart benchmark on that level's database.
func (r *rig) scaleBench(ctx context.Context) ([]scaleLevel, *restartResult, error) {
	var (
		out []scaleLevel
		rr  *restartResult
	)
	for _, n := range r.cfg.levels {
		lvl, restart, err := r.scaleLevel(ctx, n, n == r.cfg.restartAt, targetSlackask)
		if err != nil {
			return out, rr, fmt.Errorf("scale %d: %w", n, err)
		}
		out = append(out, lvl)
		if restart != nil {
			rr = restart
		}
	}
	return out, rr, nil
}

// scaleLevel runs one level with the slackask build variant.
func (r *rig) scaleLevel(ctx context.Context, n int, restart bool, variant string) (scaleLevel, *restartResult, error) {
	lvl := scaleLevel{Pending: n, Polled: min(n, r.cfg.pollers)}
	fake, err := newFake(slackfake.Config{})
	if err != nil {
		return lvl, nil, err
	}
	defer fake.Close()
	db := filepath.Join(r.dir, fmt.Sprintf("scale-%s-%d.db", variant, n))
	defer removeDB(db)
	p, err := r.startSlackask(fake, slackaskOpts{db: db, variant: variant})
	if err != nil {
		return lvl, nil, err
	}
	defer p.stop() //nolint:errcheck // already stopped on the normal path
	if _, err := p.waitReady(30 * time.Second); err != nil {
		return lvl, nil, err
	}
	a := newAPI(p.base, 32)
	defer a.close()

	// 1. Create the asks through the HTTP API.
	if p.pprofAddr != "" {
		path := filepath.Join(r.cfg.profileDir, fmt.Sprintf("%s-create-%d.pprof", variant, n))
		go func() { _ = p.cpuProfile(ctx, 3*time.Second, path) }()
		if os.Getenv("BENCH_TRACE") != "" {
			go func() { _ = p.fetch(ctx, "/debug/pprof/trace?seconds=2", strings.TrimSuffix(path, ".pprof")+".trace") }()
		}
	}
	cpu0 := proccpu.Of(p.cmd.Process.Pid)
	msgs, took, err := createAsks(ctx, a, n, r.cfg.createConc, typicalAsk)
	if err != nil {
		return lvl, nil, fmt.Errorf("create: %w\n%s", err, p.tailText())
	}
	lvl.CreatePerSec = float64(n) / took.Seconds()
	lvl.CreateCPU = (proccpu.Of(p.cmd.Process.Pid) - cpu0) / time.Duration(n)
	r.logf("  %d asks created in %v: %.0f/s, %v of CPU each (load %s)", n, took.Round(time.Millisecond), lvl.CreatePerSec, lvl.CreateCPU, loadAvg())

	// The asks alone (the state is in SQLite).
	time.Sleep(r.cfg.settle)
	st, err := procStatus(p.cmd.Process.Pid)
	if err != nil {
		return lvl, nil, err
	}
	lvl.RSSAsksKB, lvl.AnonAsksKB = st["VmRSS"], st["RssAnon"]
	r.logf("  %d pending, no callers: RSS %.1f MB (anonymous %.1f MB, file %.1f MB)", n, float64(lvl.RSSAsksKB)/1024,
		float64(lvl.AnonAsksKB)/1024, float64(st["RssFile"])/1024)
	if p.pprofAddr != "" {
		base := filepath.Join(r.cfg.profileDir, fmt.Sprintf("%s-%d-asks", variant, n))
		_ = p.fetch(ctx, "/debug/pprof/heap", base+"-heap.pprof")
		_ = p.fetch(ctx, "/debug/pprof/heap?debug=1", base+"-heap.txt")
		if raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", p.cmd.Process.Pid)); err == nil {
			_ = os.WriteFile(base+"-smaps.txt", raw, 0o644)
		}
	}

	// 2. Long-polling callers on the first of them, one connection each.
	pctx, cancelPolls := context.WithCancel(ctx)
	defer cancelPolls()
	pollers := newPollers(p.base)
	defer pollers.close()
	ids := make([]string, lvl.Polled)
	for i := range ids {
		ids[i] = msgs[i].id
	}
	if err := pollers.start(pctx, ids, 10*time.Minute); err != nil {
		return lvl, nil, err
	}
	time.Sleep(r.cfg.settle)
	// A caller cut while its connection waited for the server (issue
	// 14.5's header-reading limit can close one that has sent nothing for
	// a second while a burst connects) is counted, not fatal: the level's
	// memory is still that of the callers left.
	if early := pollers.finished(); early > 0 {
		lvl.PollsCut = early
		r.logf("  %d of %d long polls ended early, first: %v", early, lvl.Polled, pollers.firstErr())
	}
	if st, err = procStatus(p.cmd.Process.Pid); err != nil {
		return lvl, nil, err
	}
	lvl.RSSEarlyKB = st["VmRSS"]
	// The callers' connections arrive at once and leave garbage (net/http's
	// per-connection buffers); the Go runtime hands it back to the OS over
	// the following seconds. Settled is when RSS stops falling.
	if lvl.RSSKB, err = settledRSS(ctx, p.cmd.Process.Pid, 10*r.cfg.settle); err != nil {
		return lvl, nil, err
	}
	if st, err = procStatus(p.cmd.Process.Pid); err != nil {
		return lvl, nil, err
	}
	lvl.Threads = st["Threads"]
	if p.pprofAddr != "" {
		base := filepath.Join(r.cfg.profileDir, fmt.Sprintf("%s-%d", variant, n))
		_ = p.fetch(ctx, "/debug/pprof/heap", base+"-heap.pprof")
		_ = p.fetch(ctx, "/debug/pprof/heap?debug=1", base+"-heap.txt")
		_ = p.fetch(ctx, "/debug/pprof/goroutine", base+"-goroutine.pprof")
	}
	r.logf("  %d pending, %d polled: RSS %.1f MB settled (%.1f KB per caller), %.1f MB %v after the callers came, %d threads", n, lvl.Polled, float64(lvl.RSSKB)/1024,
		float64(lvl.RSSKB-lvl.RSSAsksKB)/float64(max(1, lvl.Polled)), float64(lvl.RSSEarlyKB)/1024, r.cfg.settle, lvl.Threads)

	// 3. Envelopes keep being acked at once.
	action := func(i int) func(context.Context) error { return selectAction(fake, msgs, i*7919) }
	lr := runLoad(ctx, fake, p.cmd.Process.Pid, ackCheckRate, r.cfg.ackCheckDur, action)
	lvl.Ack, lvl.AckErrors = lr.lat, lr.errors
	r.logf("  acks at %d/s: p50 %s ms, p99 %s ms, max %s ms, errors %d", ackCheckRate, ms(lr.lat.P50), ms(lr.lat.P99), ms(lr.lat.Max), lr.errors)

	// 4. Answer latency with all of that held open.
	lat, _, err := answerSamples(ctx, fake, a, r.cfg.scaleAnswers)
	if err != nil {
		return lvl, nil, fmt.Errorf("answer latency: %w\n%s", err, p.tailText())
	}
	lvl.Answer = summarize(lat)
	r.logf("  answer latency: p50 %s ms, p99 %s ms, max %s ms", ms(lvl.Answer.P50), ms(lvl.Answer.P99), ms(lvl.Answer.Max))
	if early := pollers.finished(); early > lvl.PollsCut {
		return lvl, nil, fmt.Errorf("%d long polls ended early once they were waiting, first: %v", early-lvl.PollsCut, pollers.firstErr())
	}
	if st, err = procStatus(p.cmd.Process.Pid); err != nil {
		return lvl, nil, err
	}
	lvl.RSSAfterKB, lvl.HWMKB = st["VmRSS"], st["VmHWM"]

	// 5. Goroutines, from the runtime's SIGQUIT dump (ends the process).
	if lvl.Goroutines, err = p.countGoroutines(); err != nil {
		return lvl, nil, err
	}
	r.logf("  goroutines %d, RSS after load %.1f MB, peak %.1f MB", lvl.Goroutines, float64(lvl.RSSAfterKB)/1024, float64(lvl.HWMKB)/1024)
	cancelPolls()
	pollers.wait()
	if !restart {
		return lvl, nil, nil
	}
	rr, err := r.restartBench(ctx, fake, db, n, n+r.cfg.scaleAnswers, msgs)
	return lvl, rr, err
}

// restartBench restarts slackask on a database left by a killed process
// with n pending asks: once after the kill, then cleanly reps times.
func (r *rig) restartBench(ctx context.Context, fake *slackfake.Server, db string, pending, rows int, msgs []msgRef) (*restartResult, error) {
	rr := &restartResult{Pending: pending, Rows: rows}
	run := func() (ready, recovered time.Duration, p *proc, err error) {
		if err := waitConnections(ctx, fake, 0, 10*time.Second); err != nil {
			return 0, 0, nil, err
		}
		p, err = r.startSlackask(fake, slackaskOpts{db: db})
		if err != nil {
			return 0, 0, nil, err
		}
		at, err := p.waitReady(60 * time.Second)
		if err != nil {
			_ = p.stop()
			return 0, 0, nil, err
		}
		ready = at.Sub(p.started)
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if t, ok := p.logged("recovered asks from the store"); ok {
				return ready, t.Sub(p.started), p, nil
			}
			time.Sleep(2 * time.Millisecond)
		}
		_ = p.stop()
		return ready, 0, nil, fmt.Errorf("no \"recovered asks from the store\" line within 60 s\n%s", p.tailText())
	}
	ready, rec, p, err := run()
	if err != nil {
		return rr, fmt.Errorf("restart after kill: %w", err)
	}
	rr.CrashReady, rr.CrashRecovered = ready, rec
	r.logf("  restart after SIGQUIT with %d pending: ready %s ms, recovered %s ms", pending, ms(ready), ms(rec))
	// The recovered process still takes clicks on the old messages.
	if err := waitConnections(ctx, fake, 1, 10*time.Second); err != nil {
		return rr, err
	}
	action := func(i int) func(context.Context) error { return selectAction(fake, msgs, i*104729) }
	lr := runLoad(ctx, fake, p.cmd.Process.Pid, 100, time.Second, action)
	rr.RestartAckLatency, rr.RestartAckErrors = lr.lat, lr.errors
	if err := p.stop(); err != nil {
		return rr, err
	}
	for i := range r.cfg.reps {
		ready, rec, p, err := run()
		if err != nil {
			return rr, fmt.Errorf("restart %d: %w", i+1, err)
		}
		rr.Ready, rr.Recovered = append(rr.Ready, ready), append(rr.Recovered, rec)
		r.logf("  clean restart %d with %d pending: ready %s ms, recovered %s ms", i+1, pending, ms(ready), ms(rec))
		if err := p.stop(); err != nil {
			return rr, err
		}
	}
	// Size on disk after the clean stop (the last connection's close
	// checkpoints the WAL).
	size := func(path string) int64 {
		if fi, err := os.Stat(path); err == nil {
			return fi.Size()
		}
		return 0
	}
	rr.DBBytes, rr.WALBytes, rr.SHMBytes = size(db), size(db+"-wal"), size(db+"-shm")
	rr.BytesPerAsk = float64(rr.DBBytes+rr.WALBytes) / float64(rows)
	return rr, nil
}

// pollers are long-polling HTTP callers, one TCP connection each.
type pollers struct {
	base string
	tr   *http.Transport
	c    *http.Client
	wg   sync.WaitGroup
	mu   sync.Mutex
	done int
	err  error
}

func newPollers(base string) *pollers {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute}
	return &pollers{base: base, tr: tr, c: &http.Client{Transport: tr}}
}

// start sends GET ?wait=d for each id and returns once every request has
// been written (at most 256 connections being opened at a time).
func (ps *pollers) start(ctx context.Context, ids []string, d time.Duration) error {
	sem := make(chan struct{}, 256)
	for _, id := range ids {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		var once sync.Once
		release := func() { once.Do(func() { <-sem }) }
		trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { release() }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), "GET",
			fmt.Sprintf("%s/v1/asks/%s?wait=%s", ps.base, id, d), nil)
		if err != nil {
			return err
		}
		ps.wg.Go(func() {
			defer release()
			resp, err := ps.c.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != 200 {
					err = fmt.Errorf("GET %s: %d", id, resp.StatusCode)
				}
			}
			ps.mu.Lock()
			ps.done++
			if ps.err == nil {
				ps.err = err
			}
			ps.mu.Unlock()
		})
	}
	for range cap(sem) { // every request written
		sem <- struct{}{}
	}
	return nil
}

func (ps *pollers) finished() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.done
}

func (ps *pollers) firstErr() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.err
}

func (ps *pollers) wait() { ps.wg.Wait() }

func (ps *pollers) close() { ps.tr.CloseIdleConnections() }

// settledRSS samples the resident memory of pid every second until it
// falls by less than 1 MB in a second, for at most maxWait, and returns the
// last sample (KB).
func settledRSS(ctx context.Context, pid int, maxWait time.Duration) (int64, error) {
	st, err := procStatus(pid)
	if err != nil {
		return 0, err
	}
	prev := st["VmRSS"]
	for deadline := time.Now().Add(maxWait); time.Now().Before(deadline); {
		if !clock.Sleep(ctx, time.Second) {
			return prev, ctx.Err()
		}
		if st, err = procStatus(pid); err != nil {
			return 0, err
		}
		cur := st["VmRSS"]
		if prev-cur < 1024 {
			return cur, nil
		}
		prev = cur
	}
	return prev, nil
}
