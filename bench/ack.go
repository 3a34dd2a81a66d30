package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

const (
	targetSlackask = "slackask"
	targetFloor    = "floor"
	targetBolt     = "bolt"
	targetWire     = "wire"
	// targetOld is the build slackask is compared with (BENCH_OLD_BIN).
	targetOld = "slackask-old"
)

// isSlackask reports whether target is a build of slackask (which posts
// its own asks and acts on each envelope) rather than an acker.
func isSlackask(target string) bool { return target == targetSlackask || target == targetOld }

// ackRun says what one ack benchmark runs: the targets, taking turns in
// a rotated order each repetition, the rates, and whether each slackask
// build also measures answer latency.
type ackRun struct {
	targets []string
	rates   []int
	answers bool
}

// ackResults holds, per target and rate, one loadResult per repetition,
// and slackask's answer latencies per repetition.
type ackResults struct {
	runs    map[string]map[int][]loadResult
	answers map[string][]latency // per slackask build: Submit envelope written → caller has the answer
	// answersClick: Submit pressed (the fake builds the payload) → answer.
	answersClick map[string][]latency
	errs         map[string]string // target → why it could not run
	asks         int               // asks the envelopes act on
	// rounds, roundTurns: for the sliced A/B, its rounds and the turns
	// in each; turnP99 and answerTurnP99 hold the rounds one after the
	// other.
	rounds, roundTurns int
	// turnP99: for the sliced A/B, each build's p99 of each of its turns
	// per rate, in turn order.
	turnP99 map[string]map[int][]time.Duration
	// answerTurnP99: for the sliced A/B, each build's answer p99 of each
	// of its turns.
	answerTurnP99 map[string][]time.Duration
}

// newAckResults returns empty results.
func newAckResults() *ackResults {
	return &ackResults{runs: map[string]map[int][]loadResult{}, errs: map[string]string{},
		answers: map[string][]latency{}, answersClick: map[string][]latency{}}
}

// ackBench measures ack latency of run's targets against one fake,
// rotating their order across repetitions so that drift in the machine's
// load hits all alike. Each slackask build posts its own asks, in its own
// database (an old build may not read a newer schema); the ackers replay
// the new build's payloads.
func (r *rig) ackBench(ctx context.Context, run ackRun) (*ackResults, error) {
	fake, err := newFake(slackfake.Config{})
	if err != nil {
		return nil, err
	}
	defer fake.Close()
	res := newAckResults()
	res.asks = r.cfg.ackAsks
	dbs := map[string]string{}
	payloads := map[string][]json.RawMessage{}
	for _, t := range run.targets {
		if !isSlackask(t) {
			continue
		}
		dbs[t] = filepath.Join(r.dir, "ack-"+t+".db")
		defer removeDB(dbs[t])
		if payloads[t], err = r.ackSetup(ctx, fake, dbs[t], t); err != nil {
			return res, fmt.Errorf("ack benchmark setup (%s): %w", t, err)
		}
	}
	for rep := range r.cfg.reps {
		for i := range run.targets {
			target := run.targets[(i+rep)%len(run.targets)]
			if _, failed := res.errs[target]; failed {
				continue
			}
			pl := payloads[target]
			if pl == nil {
				pl = payloads[targetSlackask]
			}
			err := r.ackTarget(ctx, fake, target, dbs[target], pl, res, run)
			if err != nil {
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				if isSlackask(target) {
					return res, fmt.Errorf("ack benchmark, %s: %w", target, err)
				}
				r.logf("  %s: %v (skipped from now on)", target, err)
				res.errs[target] = err.Error()
			}
		}
	}
	return res, nil
}

// removeDB removes a SQLite database, its WAL files and its journal of
// acked clicks.
func removeDB(db string) {
	for _, suffix := range []string{"", "-wal", "-shm", ".lock", "-acks"} {
		_ = os.Remove(db + suffix)
	}
}

// ackTargets is the targets of the ack part: BENCH_TARGETS, or all four.
func (c config) ackTargets() []string {
	var out []string
	for _, t := range []string{targetSlackask, targetFloor, targetBolt, targetWire} {
		if len(c.targets) == 0 || c.targets[t] {
			out = append(out, t)
		}
	}
	return out
}

// ackSetup has slackask post the asks the envelopes act on (so that it
// knows them and does its real work for each envelope), then captures the
// envelopes' payloads (see capturePayloads).
func (r *rig) ackSetup(ctx context.Context, fake *slackfake.Server, db, variant string) ([]json.RawMessage, error) {
	p, err := r.startSlackask(fake, slackaskOpts{db: db, variant: variant})
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = p.stop()
		_ = waitConnections(context.Background(), fake, 0, 10*time.Second)
	}()
	if _, err := p.waitReady(30 * time.Second); err != nil {
		return nil, err
	}
	a := newAPI(p.base, 8)
	defer a.close()
	msgs, _, err := createAsks(ctx, a, r.cfg.ackAsks, 8, typicalAsk)
	if err != nil {
		return nil, err
	}
	if err := p.stop(); err != nil {
		return nil, err
	}
	if err := waitConnections(ctx, fake, 0, 10*time.Second); err != nil {
		return nil, err
	}
	return capturePayloads(ctx, fake, msgs, 4*len(msgs))
}

// startTarget starts an ack target; a slackask build runs on db.
func (r *rig) startTarget(fake *slackfake.Server, target, db string, wrap ...string) (*proc, error) {
	switch target {
	case targetSlackask, targetOld:
		return r.startSlackask(fake, slackaskOpts{db: db, variant: target, wrap: wrap})
	case targetFloor:
		return r.startFloor(fake, wrap...)
	case targetBolt:
		return r.startBolt(fake)
	case targetWire:
		return r.startWire(fake, wrap...)
	}
	return nil, fmt.Errorf("unknown target %q", target)
}

// ackTarget starts one target, loads it at every rate of run and stops
// it; for a slackask build it measures answer latency first (when run
// asks for it).
func (r *rig) ackTarget(ctx context.Context, fake *slackfake.Server, target, db string, payloads []json.RawMessage, res *ackResults, run ackRun) error {
	var a *api
	p, err := r.startTarget(fake, target, db)
	if err != nil {
		return err
	}
	defer func() {
		if a != nil {
			a.close()
		}
		_ = p.stop()
		_ = waitConnections(context.Background(), fake, 0, 10*time.Second)
	}()
	if isSlackask(target) {
		if _, err := p.waitReady(30 * time.Second); err != nil {
			return err
		}
		a = newAPI(p.base, 4)
	}
	if err := waitConnections(ctx, fake, 1, 30*time.Second); err != nil {
		return fmt.Errorf("%w\n%s", err, p.tailText())
	}
	action := replay(fake, payloads)
	// Warm-up (discarded): connections, caches, Node's JIT.
	if w := runLoad(ctx, fake, p.cmd.Process.Pid, 100, r.cfg.warmup, action); w.errors > 0 {
		return fmt.Errorf("warm-up: %d of %d envelopes failed, first: %v\n%s", w.errors, w.sent, w.firstErr, p.tailText())
	}
	if isSlackask(target) && run.answers && r.cfg.answers > 0 {
		// Answer latency first, on a quiet process.
		waitIdle(p.cmd.Process.Pid, r.cfg.pause)
		if p.pprofAddr != "" && os.Getenv("BENCH_TRACE") != "" {
			path := filepath.Join(r.cfg.profileDir, target+"-answer.trace")
			go func() { _ = p.fetch(ctx, "/debug/pprof/trace?seconds=3", path) }()
		}
		lat, click, err := answerSamples(ctx, fake, a, r.cfg.answers)
		if err != nil {
			return fmt.Errorf("answer latency: %w\n%s", err, p.tailText())
		}
		s, c := summarize(lat), summarize(click)
		res.answers[target] = append(res.answers[target], s)
		res.answersClick[target] = append(res.answersClick[target], c)
		r.logf("  %s answer latency: n=%d p50 %s ms, p99 %s ms, max %s ms (from the click: p50 %s ms, p99 %s ms)", target, s.N, ms(s.P50), ms(s.P99), ms(s.Max), ms(c.P50), ms(c.P99))
	}
	for _, rate := range run.rates {
		// Each rate starts on a quiet target: the work slackask queued
		// after acking the previous rate's envelopes is done.
		waitIdle(p.cmd.Process.Pid, r.cfg.pause)
		var prof chan error
		if target == targetSlackask && p.pprofAddr != "" && r.cfg.ackDur >= 2*time.Second {
			prof = make(chan error, 1)
			path := filepath.Join(r.cfg.profileDir, fmt.Sprintf("slackask-ack-%d.pprof", rate))
			go func() { prof <- p.cpuProfile(ctx, r.cfg.ackDur-time.Second, path) }()
			if os.Getenv("BENCH_TRACE") != "" {
				tpath := filepath.Join(r.cfg.profileDir, fmt.Sprintf("slackask-ack-%d.trace", rate))
				go func() { _ = p.fetch(ctx, "/debug/pprof/trace?seconds=3", tpath) }()
			}
		}
		lr := runLoad(ctx, fake, p.cmd.Process.Pid, rate, r.cfg.ackDur, action)
		if prof != nil {
			if err := <-prof; err != nil {
				r.logf("  profile: %v", err)
			}
		}
		if res.runs[target] == nil {
			res.runs[target] = map[int][]loadResult{}
		}
		res.runs[target][rate] = append(res.runs[target][rate], lr)
		r.logf("  %-8s %5d/s: n=%d p50 %s ms, p99 %s ms, max %s ms, errors %d, sender lag %s ms; CPU/envelope %s ms (driver %s ms); load %s",
			target, rate, lr.lat.N, ms(lr.lat.P50), ms(lr.lat.P99), ms(lr.lat.Max), lr.errors, ms(lr.lag),
			ms(lr.cpuPer()), ms(lr.driverCPU/time.Duration(max(1, lr.sent))), loadAvg())
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if target == targetSlackask && p.pprofAddr != "" {
		// Everything slackask allocated since it started (alloc_space):
		// mostly the loads above.
		if err := p.fetch(ctx, "/debug/pprof/heap", filepath.Join(r.cfg.profileDir, "slackask-ack-heap.pprof")); err != nil {
			r.logf("  heap profile: %v", err)
		}
	}
	return nil
}

// answerSamples creates n asks one after another; for each, a caller
// long-polls GET /v1/asks/{id}?wait, a person picks in both selects and
// presses Submit. It returns two samples per ask: from the fake writing
// the Submit envelope to the socket to the caller having the answer (out),
// and from the person pressing Submit, which includes the fake building
// the payload from the person's client state (fromClick). The next ask
// follows once the message shows the answer.
func answerSamples(ctx context.Context, fake *slackfake.Server, a *api, n int) (out, fromClick []time.Duration, err error) {
	return answerSamplesFrom(ctx, fake, a, 0, n)
}

// answerSamplesFrom is answerSamples for the asks from..from+n-1 of
// typicalAsk, so that turns of one build take different people and asks.
func answerSamplesFrom(ctx context.Context, fake *slackfake.Server, a *api, from, n int) (out, fromClick []time.Duration, err error) {
	out = make([]time.Duration, 0, n)
	for i := from; i < from+n; i++ {
		ask, err := a.create(ctx, typicalAsk(i))
		if err != nil {
			return out, fromClick, err
		}
		m := msgRef{id: ask.ID, channel: ask.Channel, ts: ask.TS}
		done := poll(ctx, a, m.id, time.Minute)
		p := fake.Person(personID(i))
		if _, err := p.Select(ctx, m.channel, m.ts, control(0, "select"), "SQLite"); err != nil {
			return out, fromClick, err
		}
		if _, err := p.Select(ctx, m.channel, m.ts, control(1, "select"), "dev", "prod"); err != nil {
			return out, fromClick, err
		}
		// A person takes far longer than this to reach Submit; without
		// the pause the Submit would queue behind the picks' work.
		time.Sleep(personPause)
		t0 := time.Now()
		if _, err := p.Click(ctx, m.channel, m.ts, control(-1, "submit")); err != nil {
			return out, fromClick, err
		}
		var res pollResult
		select {
		case res = <-done:
		case <-time.After(30 * time.Second):
			return out, fromClick, fmt.Errorf("ask %s: no answer reached the caller within 30 s", m.id)
		}
		if res.err != nil {
			return out, fromClick, res.err
		}
		if res.ask.Status != interaction.StatusAnswered || res.ask.Answer == nil ||
			len(res.ask.Answer.Answers) != 3 || len(res.ask.Answer.Answers[1].Selected) != 2 {
			return out, fromClick, fmt.Errorf("ask %s: caller got %+v", m.id, res.ask)
		}
		out = append(out, res.at.Sub(fake.LastSent()))
		fromClick = append(fromClick, res.at.Sub(t0))
		// The next sample starts once this ask's message shows the answer.
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = fake.WaitFor(wctx, func() bool {
			msg, ok := fake.Message(m.channel, m.ts)
			return ok && msg.Updates > 0 && !strings.Contains(string(msg.Blocks), `"type":"actions"`)
		})
		cancel()
		if err != nil {
			return out, fromClick, fmt.Errorf("ask %s: the message never showed the answer: %w", m.id, err)
		}
	}
	return out, fromClick, nil
}

// personPause is the least time between a person's picks and their
// Submit in answerSamples; people take hundreds of milliseconds.
const personPause = 20 * time.Millisecond

// pollResult is what a long-polling caller received, and when.
type pollResult struct {
	ask interaction.Ask
	at  time.Time
	err error
}

// poll starts a caller waiting on GET /v1/asks/{id}?wait=d.
func poll(ctx context.Context, a *api, id string, d time.Duration) <-chan pollResult {
	ch := make(chan pollResult, 1)
	go func() {
		ask, _, at, err := a.doAt(ctx, "GET", fmt.Sprintf("/v1/asks/%s?wait=%s", id, d), nil)
		ch <- pollResult{ask: ask, at: at, err: err}
	}()
	return ch
}
