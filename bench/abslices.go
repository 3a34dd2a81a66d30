package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/slackask/slackask/internal/slackfake"
)

// abSliceRun says how the A/B measures ack and answer latency: both
// builds are up at once, each with its own fake and database, and they
// take turns in short slices (sliceDur of load, or answers answer
// samples), the first of each pair alternating. Each build's samples are
// pooled over its slices (a p50, and a p99 of all of them), and each
// slice's own p99 is kept: the report judges the median of those, which
// a second of disturbance in a few slices does not move as it moves the
// pooled p99.
//
// Why slices and not repetitions of a whole run per build: on a shared
// two-core host the machine's own state (other tenants, the page cache,
// the load average) drifts over tens of seconds to minutes, and with
// runs of 20 s per build one build would catch a calm minute and the
// other a busy one, and the ratio of their tail latencies moved between
// runs of the same two binaries by more than the 10 % it is held to
// (BENCHMARKS.md). Slices of two seconds put both builds in the same
// minutes. Only one build has load at a time,
// and each slice starts once the build before it is idle, so neither
// measures the other's work.
type abSliceRun struct {
	slices   int
	sliceDur time.Duration
	rates    []int
	answers  int // answer samples per build in each turn
}

// abBuild is one build's side of the sliced A/B.
type abBuild struct {
	target  string
	fake    *slackfake.Server
	p       *proc
	a       *api
	action  func(i int) func(context.Context) error
	next    int // the payload the next slice starts at, so slices go on through them
	answerI int // asks created for answer samples so far
}

// abAckSliced measures run for targetSlackask and targetOld and returns
// their results as one pooled loadResult per rate and one pooled answer
// latency each, plus each build's acks split at the middle turn
// (ackResults.halves) and the p99 of each of its turns (turnP99,
// answerTurnP99).
func (r *rig) abAckSliced(ctx context.Context, run abSliceRun) (*ackResults, error) {
	res := newAckResults()
	res.asks = r.cfg.ackAsks
	res.halves = map[string]map[int][2][]time.Duration{}
	res.turnP99 = map[string]map[int][]time.Duration{}
	var builds []*abBuild
	defer func() {
		for _, b := range builds {
			if b.a != nil {
				b.a.close()
			}
			if b.p != nil {
				_ = b.p.stop()
			}
			b.fake.Close()
		}
	}()
	for _, t := range []string{targetSlackask, targetOld} {
		fake, err := newFake(slackfake.Config{})
		if err != nil {
			return res, err
		}
		b := &abBuild{target: t, fake: fake}
		builds = append(builds, b)
		db := filepath.Join(r.dir, "ab-"+t+".db")
		defer removeDB(db)
		var payloads []json.RawMessage
		if payloads, err = r.ackSetup(ctx, fake, db, t); err != nil {
			return res, fmt.Errorf("A/B setup (%s): %w", t, err)
		}
		b.action = replay(fake, payloads)
		if b.p, err = r.startTarget(fake, t, db); err != nil {
			return res, err
		}
		if _, err := b.p.waitReady(30 * time.Second); err != nil {
			return res, err
		}
		b.a = newAPI(b.p.base, 4)
		if err := waitConnections(ctx, fake, 1, 30*time.Second); err != nil {
			return res, fmt.Errorf("%w\n%s", err, b.p.tailText())
		}
		// Warm-up (discarded): connections, caches, the Go runtime's heap.
		if w := b.load(ctx, 100, r.cfg.warmup); w.errors > 0 {
			return res, fmt.Errorf("%s warm-up: %d of %d envelopes failed, first: %v\n%s", t, w.errors, w.sent, w.firstErr, b.p.tailText())
		}
	}
	// last is the build that had load last: the next slice waits for it
	// to be idle. The other one was idle all through that slice.
	var last *abBuild
	turns := func(slice int) []*abBuild {
		if slice%2 == 0 {
			return builds
		}
		return []*abBuild{builds[1], builds[0]}
	}
	settle := func() {
		if last != nil {
			waitIdle(last.p.cmd.Process.Pid, 100*time.Millisecond)
		}
	}
	if run.answers > 0 {
		res.answerTurnP99 = map[string][]time.Duration{}
		lat := map[string][]time.Duration{}
		click := map[string][]time.Duration{}
		for s := range run.slices {
			for _, b := range turns(s) {
				settle()
				l, c, err := answerSamplesFrom(ctx, b.fake, b.a, b.answerI, run.answers)
				if err != nil {
					return res, fmt.Errorf("%s answer latency: %w\n%s", b.target, err, b.p.tailText())
				}
				b.answerI += run.answers
				res.answerTurnP99[b.target] = append(res.answerTurnP99[b.target], summarize(l).P99)
				lat[b.target], click[b.target] = append(lat[b.target], l...), append(click[b.target], c...)
				last = b
			}
		}
		for _, b := range builds {
			s, c := summarize(lat[b.target]), summarize(click[b.target])
			res.answers[b.target] = []latency{s}
			res.answersClick[b.target] = []latency{c}
			r.logf("  %s answer latency: n=%d p50 %s ms, p99 %s ms, max %s ms (from the click: p50 %s ms, p99 %s ms)", b.target, s.N, ms(s.P50), ms(s.P99), ms(s.Max), ms(c.P50), ms(c.P99))
		}
	}
	for _, rate := range run.rates {
		pooled := map[string]*loadResult{}
		split := map[string]int{} // where each build's second half of turns starts in its samples
		for s := range run.slices {
			for _, b := range turns(s) {
				settle()
				lr := b.load(ctx, rate, run.sliceDur)
				last = b
				if ctx.Err() != nil {
					return res, ctx.Err()
				}
				pooled[b.target] = pooled[b.target].add(lr)
				if res.turnP99[b.target] == nil {
					res.turnP99[b.target] = map[int][]time.Duration{}
				}
				res.turnP99[b.target][rate] = append(res.turnP99[b.target][rate], lr.lat.P99)
				if 2*s < run.slices {
					split[b.target] = len(pooled[b.target].samples)
				}
				r.logf("    turn %d %-12s %5d/s: p50 %s ms, p99 %s ms, max %s ms, sender lag %s ms", s+1, b.target, rate, ms(lr.lat.P50), ms(lr.lat.P99), ms(lr.lat.Max), ms(lr.lag))
			}
		}
		for _, b := range builds {
			lr := pooled[b.target]
			lr.lat = summarize(lr.samples)
			if res.runs[b.target] == nil {
				res.runs[b.target] = map[int][]loadResult{}
			}
			res.runs[b.target][rate] = []loadResult{*lr}
			if res.halves[b.target] == nil {
				res.halves[b.target] = map[int][2][]time.Duration{}
			}
			k := split[b.target]
			res.halves[b.target][rate] = [2][]time.Duration{lr.samples[:k], lr.samples[k:]}
			r.logf("  %-12s %5d/s: %d slices of %v, n=%d p50 %s ms, p99 %s ms, max %s ms, errors %d, sender lag %s ms at worst; CPU/envelope %s ms; load %s",
				b.target, rate, run.slices, run.sliceDur, lr.lat.N, ms(lr.lat.P50), ms(lr.lat.P99), ms(lr.lat.Max), lr.errors, ms(lr.lag), ms(lr.cpuPer()), loadAvg())
		}
	}
	return res, nil
}

// load runs one slice of rate envelopes per second for d, going on
// through b's payloads from where the last slice stopped.
func (b *abBuild) load(ctx context.Context, rate int, d time.Duration) loadResult {
	base := b.next
	lr := runLoad(ctx, b.fake, b.p.cmd.Process.Pid, rate, d, func(i int) func(context.Context) error { return b.action(base + i) })
	b.next += lr.sent
	return lr
}

// add pools o into l (nil: a new pool): samples, counts and CPU add up,
// lag is the worst; the summary is left to the caller.
func (l *loadResult) add(o loadResult) *loadResult {
	if l == nil {
		l = &loadResult{}
	}
	l.samples = append(l.samples, o.samples...)
	l.sent += o.sent
	l.errors += o.errors
	if l.firstErr == nil {
		l.firstErr = o.firstErr
	}
	l.lag = max(l.lag, o.lag)
	l.targetCPU += o.targetCPU
	l.driverCPU += o.driverCPU
	return l
}
