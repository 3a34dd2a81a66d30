package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/slackask/slackask/internal/slackfake"
)

// capacityP99 is the ack p99 a client must stay under at a rate for the
// rate to count as sustained (Slack's own limit is 3 s; 100 ms leaves
// the person no wait they could notice).
const capacityP99 = 100 * time.Millisecond

// capStep is one rate of a capacity search.
type capStep struct {
	Rate   int
	Lat    latency
	Sent   int
	Errors int
	CPUPer time.Duration // the target's CPU time per envelope sent
	// DriverPer is the driver's (fake and senders') CPU per envelope.
	DriverPer time.Duration
	Lag       time.Duration // how far the sender fell behind at worst
	OK        bool
}

// capacityResults holds, per target, one search (its steps, up to the
// first failure) per repetition.
type capacityResults struct {
	steps map[string][][]capStep
	errs  map[string]string
	rates []int
}

// sustained reports whether a load kept every ack under capacityP99.
func sustained(lr loadResult) bool {
	return lr.errors == 0 && lr.lat.N == lr.sent && lr.lat.P99 < capacityP99
}

// capacityBench finds, for each client, the highest rate of the step
// list at which its ack p99 stays under capacityP99: each client runs the
// rates in increasing order, a short load each, and stops at the first
// rate it fails. The CPU time per envelope of every step is kept. Clients
// take turns in a rotated order in each repetition.
func (r *rig) capacityBench(ctx context.Context, targets []string) (*capacityResults, error) {
	fake, err := newFake(slackfake.Config{})
	if err != nil {
		return nil, err
	}
	defer fake.Close()
	res := &capacityResults{steps: map[string][][]capStep{}, errs: map[string]string{}, rates: r.cfg.capRates}
	db := filepath.Join(r.dir, "capacity.db")
	defer removeDB(db)
	payloads, err := r.ackSetup(ctx, fake, db, targetSlackask)
	if err != nil {
		return res, fmt.Errorf("capacity setup: %w", err)
	}
	for rep := range r.cfg.reps {
		for i := range targets {
			target := targets[(i+rep)%len(targets)]
			if _, failed := res.errs[target]; failed {
				continue
			}
			steps, err := r.capacitySearch(ctx, fake, target, db, payloads)
			if err != nil {
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				if target == targetSlackask {
					return res, fmt.Errorf("capacity, slackask: %w", err)
				}
				r.logf("  %s: %v (skipped from now on)", target, err)
				res.errs[target] = err.Error()
				continue
			}
			res.steps[target] = append(res.steps[target], steps)
		}
	}
	return res, nil
}

// capacitySearch starts target once and loads it at each rate of the
// step list until one is not sustained.
func (r *rig) capacitySearch(ctx context.Context, fake *slackfake.Server, target, db string, payloads []json.RawMessage) ([]capStep, error) {
	p, err := r.startTarget(fake, target, db)
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = p.stop()
		_ = waitConnections(context.Background(), fake, 0, 10*time.Second)
	}()
	if isSlackask(target) {
		if _, err := p.waitReady(30 * time.Second); err != nil {
			return nil, err
		}
	}
	if err := waitConnections(ctx, fake, 1, 30*time.Second); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, p.tailText())
	}
	action := replay(fake, payloads)
	if w := runLoad(ctx, fake, p.cmd.Process.Pid, 100, r.cfg.warmup, action); w.errors > 0 {
		return nil, fmt.Errorf("warm-up: %d of %d envelopes failed, first: %v\n%s", w.errors, w.sent, w.firstErr, p.tailText())
	}
	var steps []capStep
	for _, rate := range r.cfg.capRates {
		waitIdle(p.cmd.Process.Pid, r.cfg.pause)
		lr := runLoad(ctx, fake, p.cmd.Process.Pid, rate, r.cfg.capDur, action)
		st := capStep{Rate: rate, Lat: lr.lat, Sent: lr.sent, Errors: lr.errors, CPUPer: lr.cpuPer(),
			DriverPer: lr.driverCPU / time.Duration(max(1, lr.sent)), Lag: lr.lag, OK: sustained(lr)}
		steps = append(steps, st)
		verdict := "sustained"
		if !st.OK {
			verdict = "NOT sustained"
		}
		r.logf("  capacity %-12s %5d/s: n=%d/%d p50 %s ms, p99 %s ms, max %s ms, errors %d, sender lag %s ms; CPU/envelope %s ms (driver %s ms); %s; load %s",
			target, rate, lr.lat.N, lr.sent, ms(lr.lat.P50), ms(lr.lat.P99), ms(lr.lat.Max), lr.errors, ms(lr.lag),
			ms(st.CPUPer), ms(st.DriverPer), verdict, loadAvg())
		if ctx.Err() != nil {
			return steps, ctx.Err()
		}
		if !st.OK {
			break
		}
	}
	return steps, nil
}

// capacity is the highest sustained rate of one search (0: none).
func capacity(steps []capStep) int {
	best := 0
	for _, s := range steps {
		if !s.OK {
			break
		}
		best = s.Rate
	}
	return best
}

// step returns the steps of target at rate over the repetitions.
func (c *capacityResults) step(target string, rate int) []capStep {
	var out []capStep
	for _, search := range c.steps[target] {
		for _, s := range search {
			if s.Rate == rate {
				out = append(out, s)
			}
		}
	}
	return out
}
