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
)

// ackResults holds, per target and rate, one loadResult per repetition,
// and slackask's answer latencies per repetition.
type ackResults struct {
	runs    map[string]map[int][]loadResult
	answers []latency // Submit envelope written → caller has the answer
	// answersClick: Submit pressed (the fake builds the payload) → answer.
	answersClick []latency
	errs         map[string]string // target → why it could not run
	asks         int               // asks the envelopes act on
}

// ackBench measures ack latency of slackask, the floor and Bolt against
// one fake, interleaving the targets across repetitions so that drift in
// the machine's load hits all three alike. While slackask runs, it also
// measures answer latency.
func (r *rig) ackBench(ctx context.Context) (*ackResults, error) {
	fake, err := newFake(slackfake.Config{})
	if err != nil {
		return nil, err
	}
	defer fake.Close()
	res := &ackResults{runs: map[string]map[int][]loadResult{}, errs: map[string]string{}}
	db := filepath.Join(r.dir, "ack.db")
	defer os.Remove(db)
	payloads, err := r.ackSetup(ctx, fake, db)
	if err != nil {
		return res, fmt.Errorf("ack benchmark setup: %w", err)
	}
	res.asks = r.cfg.ackAsks
	orders := [][]string{
		{targetSlackask, targetFloor, targetBolt, targetWire},
		{targetFloor, targetBolt, targetWire, targetSlackask},
		{targetBolt, targetWire, targetSlackask, targetFloor},
	}
	for rep := range r.cfg.reps {
		for _, target := range orders[rep%len(orders)] {
			if _, failed := res.errs[target]; failed || (len(r.cfg.targets) > 0 && !r.cfg.targets[target]) {
				continue
			}
			err := r.ackTarget(ctx, fake, target, db, payloads, res)
			if err != nil {
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				if target == targetSlackask {
					return res, fmt.Errorf("ack benchmark, slackask: %w", err)
				}
				r.logf("  %s: %v (skipped from now on)", target, err)
				res.errs[target] = err.Error()
			}
		}
	}
	return res, nil
}

// ackSetup has slackask post the asks the envelopes act on (so that it
// knows them and does its real work for each envelope), then captures the
// envelopes' payloads (see capturePayloads).
func (r *rig) ackSetup(ctx context.Context, fake *slackfake.Server, db string) ([]json.RawMessage, error) {
	p, err := r.startSlackask(fake, slackaskOpts{db: db})
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

// ackTarget starts one target, loads it at every rate and stops it; for
// slackask it measures answer latency first.
func (r *rig) ackTarget(ctx context.Context, fake *slackfake.Server, target, db string, payloads []json.RawMessage, res *ackResults) error {
	var (
		p   *proc
		err error
		a   *api
	)
	switch target {
	case targetSlackask:
		p, err = r.startSlackask(fake, slackaskOpts{db: db})
	case targetFloor:
		p, err = r.startFloor(fake)
	case targetBolt:
		p, err = r.startBolt(fake)
	case targetWire:
		p, err = r.startWire(fake)
	}
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
	if target == targetSlackask {
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
	if target == targetSlackask {
		// Answer latency first, on a quiet process.
		waitIdle(p.cmd.Process.Pid, r.cfg.pause)
		if p.pprofAddr != "" && os.Getenv("BENCH_TRACE") != "" {
			path := filepath.Join(r.cfg.profileDir, "slackask-answer.trace")
			go func() { _ = p.fetch(ctx, "/debug/pprof/trace?seconds=3", path) }()
		}
		lat, click, err := answerSamples(ctx, fake, a, r.cfg.answers)
		if err != nil {
			return fmt.Errorf("answer latency: %w\n%s", err, p.tailText())
		}
		s, c := summarize(lat), summarize(click)
		res.answers = append(res.answers, s)
		res.answersClick = append(res.answersClick, c)
		r.logf("  answer latency: n=%d p50 %s ms, p99 %s ms, max %s ms (from the click: p50 %s ms, p99 %s ms)", s.N, ms(s.P50), ms(s.P99), ms(s.Max), ms(c.P50), ms(c.P99))
	}
	for _, rate := range r.cfg.rates {
		// Each rate starts on a quiet target: the work slackask queued
		// after acking the previous rate's envelopes is done.
		waitIdle(p.cmd.Process.Pid, r.cfg.pause)
		var prof chan error
		if target == targetSlackask && p.pprofAddr != "" && r.cfg.ackDur >= 2*time.Second {
			prof = make(chan error, 1)
			path := filepath.Join(r.cfg.profileDir, fmt.Sprintf("slackask-ack-%d.pprof", rate))
			go func() { prof <- p.cpuProfile(ctx, r.cfg.ackDur-time.Second, path) }()
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
	out = make([]time.Duration, 0, n)
	for i := range n {
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
