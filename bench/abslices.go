package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/slackask/slackask/internal/slackfake"
)

// abSliceRun says how the A/B measures ack and answer latency. The run
// is cut into rounds, and each round sets both builds up afresh, each
// with its own fake, database and process, the build set up first
// alternating from round to round. In a round both builds are measured
// at the same time, their work interleaved: acks at a rate as one stream
// of envelopes that alternates between them (each build gets the rate,
// the other's envelopes half a period after its own), and answers one
// ask at a time, each build's in turn. A round is cut into turns
// (sliceDur of load, or answers asks per build) whose first build
// alternates, and which start once both builds are idle. Each build's
// samples are pooled over all turns (a p50, and a p99 of all of them),
// and each turn's own p99 is kept: the report judges the median of the
// turns' p99s.
//
// Interleaved, so that a burst of the shared machine hits both builds'
// samples alike (the price: each build's work can delay the other's next
// envelope); in rounds from fresh copies of both binaries, because one
// setup per build for a whole run favoured one side even in an A/A run
// (18e8daf says how much; BENCHMARKS.md, "A/B").
type abSliceRun struct {
	slices   int // turns per build and rate (answers too), over all rounds
	rounds   int // each round starts both builds afresh
	sliceDur time.Duration
	rates    []int
	answers  int // answer samples per build in each turn
}

// abBuild is one build's side of the sliced A/B.
type abBuild struct {
	target  string
	db      string
	bin     string // the copy of its binary it runs (stageBinary)
	fake    *slackfake.Server
	p       *proc
	a       *api
	action  func(i int) func(context.Context) error
	next    int // the payload the next slice starts at, so slices go on through them
	answerI int // asks created for answer samples so far
}

// abAckSliced measures run for targetSlackask and targetOld and returns
// their results as one pooled loadResult per rate and one pooled answer
// latency each, plus the p99 of each of their turns (turnP99,
// answerTurnP99), the rounds one after the other (roundTurns each).
func (r *rig) abAckSliced(ctx context.Context, run abSliceRun) (*ackResults, error) {
	res := newAckResults()
	res.asks = r.cfg.ackAsks
	res.turnP99 = map[string]map[int][]time.Duration{}
	rounds := max(1, min(run.rounds, run.slices))
	per := max(1, run.slices/rounds) // turns per round
	res.rounds, res.roundTurns = rounds, per
	if run.answers > 0 {
		res.answerTurnP99 = map[string][]time.Duration{}
	}
	lat := map[string][]time.Duration{}
	click := map[string][]time.Duration{}
	pooled := map[int]map[string]*loadResult{}
	for _, rate := range run.rates {
		pooled[rate] = map[string]*loadResult{}
	}
	for round := range rounds {
		// The build set up first alternates from round to round.
		targets := []string{targetSlackask, targetOld}
		if round%2 == 1 {
			targets = []string{targetOld, targetSlackask}
		}
		builds, err := r.abSetup(ctx, targets)
		if err == nil {
			err = r.abRound(ctx, run, round*per, per, builds, res, pooled, lat, click)
		}
		for _, b := range builds {
			b.close()
		}
		if err != nil {
			return res, err
		}
	}
	for _, t := range []string{targetSlackask, targetOld} {
		if run.answers > 0 {
			s, c := summarize(lat[t]), summarize(click[t])
			res.answers[t] = []latency{s}
			res.answersClick[t] = []latency{c}
			r.logf("  %s answer latency: n=%d p50 %s ms, p99 %s ms, max %s ms (from the click: p50 %s ms, p99 %s ms)", t, s.N, ms(s.P50), ms(s.P99), ms(s.Max), ms(c.P50), ms(c.P99))
		}
		for _, rate := range run.rates {
			lr := pooled[rate][t]
			lr.lat = summarize(lr.samples)
			if res.runs[t] == nil {
				res.runs[t] = map[int][]loadResult{}
			}
			res.runs[t][rate] = []loadResult{*lr}
			r.logf("  %-12s %5d/s: %d rounds of %d turns of %v, n=%d p50 %s ms, p99 %s ms, max %s ms, errors %d, sender lag %s ms at worst; CPU/envelope %s ms; load %s",
				t, rate, rounds, per, run.sliceDur, lr.lat.N, ms(lr.lat.P50), ms(lr.lat.P99), ms(lr.lat.Max), lr.errors, ms(lr.lag), ms(lr.cpuPer()), loadAvg())
		}
	}
	return res, nil
}

// abSetup sets up and starts the builds of targets, in that order, each
// with a fake and a database of its own; on an error it returns those it
// set up so far, for the caller to close.
func (r *rig) abSetup(ctx context.Context, targets []string) ([]*abBuild, error) {
	var builds []*abBuild
	for _, t := range targets {
		fake, err := newFake(slackfake.Config{})
		if err != nil {
			return builds, err
		}
		b := &abBuild{target: t, fake: fake, db: filepath.Join(r.dir, "ab-"+t+".db"), bin: filepath.Join(r.dir, "ab-"+t)}
		builds = append(builds, b)
		if err := stageBinary(r.bins.bin(t), b.bin); err != nil {
			return builds, err
		}
		payloads, err := r.ackSetup(ctx, fake, b.db, t)
		if err != nil {
			return builds, fmt.Errorf("A/B setup (%s): %w", t, err)
		}
		b.action = replay(fake, payloads)
		if err := r.startAB(ctx, b); err != nil {
			return builds, err
		}
	}
	return builds, nil
}

// abRound runs one round's per turns, numbered from first: the answers'
// turns, then each rate's, adding each build's samples to res, pooled,
// lat and click.
func (r *rig) abRound(ctx context.Context, run abSliceRun, first, per int, builds []*abBuild, res *ackResults, pooled map[int]map[string]*loadResult, lat, click map[string][]time.Duration) error {
	// order is the builds in turn s: the first of each turn alternates.
	order := func(s int) []*abBuild {
		if s%2 == 0 {
			return builds
		}
		return []*abBuild{builds[1], builds[0]}
	}
	settle := func() {
		waitIdle(builds[0].p.cmd.Process.Pid, 0)
		waitIdle(builds[1].p.cmd.Process.Pid, 100*time.Millisecond)
	}
	for s := first; s < first+per && run.answers > 0; s++ {
		settle()
		turn := map[string][]time.Duration{}
		for range run.answers {
			for _, b := range order(s) {
				l, c, err := answerSamplesFrom(ctx, b.fake, b.a, b.answerI, 1)
				if err != nil {
					return fmt.Errorf("%s answer latency: %w\n%s", b.target, err, b.p.tailText())
				}
				b.answerI++
				turn[b.target] = append(turn[b.target], l...)
				lat[b.target], click[b.target] = append(lat[b.target], l...), append(click[b.target], c...)
			}
		}
		for _, b := range builds {
			res.answerTurnP99[b.target] = append(res.answerTurnP99[b.target], summarize(turn[b.target]).P99)
		}
	}
	for _, rate := range run.rates {
		for s := first; s < first+per; s++ {
			settle()
			bs := order(s)
			lrs := loadTogether(ctx, bs, rate, run.sliceDur)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			for k, b := range bs {
				lr := lrs[k]
				pooled[rate][b.target] = pooled[rate][b.target].add(lr)
				if res.turnP99[b.target] == nil {
					res.turnP99[b.target] = map[int][]time.Duration{}
				}
				res.turnP99[b.target][rate] = append(res.turnP99[b.target][rate], lr.lat.P99)
				r.logf("    turn %d %-12s %5d/s: p50 %s ms, p99 %s ms, max %s ms, sender lag %s ms", s+1, b.target, rate, ms(lr.lat.P50), ms(lr.lat.P99), ms(lr.lat.Max), ms(lr.lag))
			}
		}
	}
	return nil
}

// startAB starts b's build on its database and fake, waits until it is
// connected, and warms it up (discarded): the connection, caches, the Go
// runtime's heap.
func (r *rig) startAB(ctx context.Context, b *abBuild) error {
	p, err := r.startSlackask(b.fake, slackaskOpts{db: b.db, variant: b.target, bin: b.bin})
	if err != nil {
		return err
	}
	b.p = p
	if _, err := p.waitReady(30 * time.Second); err != nil {
		return err
	}
	b.a = newAPI(p.base, 4)
	if err := waitConnections(ctx, b.fake, 1, 30*time.Second); err != nil {
		return fmt.Errorf("%w\n%s", err, p.tailText())
	}
	if w := b.load(ctx, 100, r.cfg.warmup); w.errors > 0 {
		return fmt.Errorf("%s warm-up: %d of %d envelopes failed, first: %v\n%s", b.target, w.errors, w.sent, w.firstErr, p.tailText())
	}
	return nil
}

// close stops b's build, if it runs, closes its fake and removes its
// database.
func (b *abBuild) close() {
	if b.a != nil {
		b.a.close()
	}
	if b.p != nil {
		_ = b.p.stop()
	}
	b.fake.Close()
	removeDB(b.db)
	_ = os.Remove(b.bin)
}

// stageBinary copies the executable from to a new file to, read whole
// and written with one write, so that both builds of the A/B run from
// files made the same way. How a file came to be in the page cache
// decides how its text is mapped (a file written with one write is
// mapped with 2 MB pages from the start, the linker's output and cp's
// copy were not), and that moved the p99 of one binary by more than the
// 10 % the A/B is held to (BENCHMARKS.md).
func stageBinary(from, to string) error {
	raw, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("stage %s: %w", from, err)
	}
	if err := os.WriteFile(to, raw, 0o755); err != nil {
		return fmt.Errorf("stage %s: %w", from, err)
	}
	return nil
}

// load runs rate envelopes per second for d on b alone, going on
// through b's payloads from where its last load stopped.
func (b *abBuild) load(ctx context.Context, rate int, d time.Duration) loadResult {
	return loadTogether(ctx, []*abBuild{b}, rate, d)[0]
}

// loadTogether runs rate envelopes per second for d on each of bs at
// once, interleaved in the order of bs (runLoads), each going on through
// its payloads from where its last load stopped.
func loadTogether(ctx context.Context, bs []*abBuild, rate int, d time.Duration) []loadResult {
	specs := make([]loadSpec, len(bs))
	for k, b := range bs {
		base := b.next
		specs[k] = loadSpec{fake: b.fake, pid: b.p.cmd.Process.Pid, action: func(i int) func(context.Context) error { return b.action(base + i) }}
	}
	lrs := runLoads(ctx, rate, d, specs)
	for k, b := range bs {
		b.next += lrs[k].sent
	}
	return lrs
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
