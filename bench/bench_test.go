package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/slackask/slackask/blocks"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/slackfake"
)

// roundsInterval's interval is the ratio itself when every turn differs
// by it, spans the rounds' own ratios when those differ, and is refused
// without two whole rounds.
func TestRoundsInterval(t *testing.T) {
	var old, scaled, shifted []time.Duration
	for r := range 5 {
		for i := range 4 {
			o := time.Duration(5*(i+1)) * time.Millisecond
			old = append(old, o)
			scaled = append(scaled, o*6/5)
			// Round r is 0.8× … 1.2× old: a setup's luck, whole rounds.
			shifted = append(shifted, o*time.Duration(8+r)/10)
		}
	}
	if lo, hi, ok := roundsInterval(old, scaled, 4); !ok || lo != 1.2 || hi != 1.2 {
		t.Errorf("every turn 1.2×: interval %v–%v (ok %v), want 1.2–1.2", lo, hi, ok)
	}
	lo, hi, ok := roundsInterval(old, shifted, 4)
	if !ok || lo < 0.8 || hi > 1.2 || lo >= 1 || hi <= 1 || hi-lo < 0.1 {
		t.Errorf("rounds 0.8×…1.2×: interval %v–%v (ok %v), want a span around 1 within 0.8–1.2", lo, hi, ok)
	}
	if lo2, hi2, _ := roundsInterval(old, shifted, 4); lo2 != lo || hi2 != hi {
		t.Errorf("a second call gave %v–%v, the first %v–%v: the draws are not seeded", lo2, hi2, lo, hi)
	}
	if _, _, ok := roundsInterval(old[:7], scaled[:7], 4); ok {
		t.Error("an interval from one whole round")
	}
	if _, _, ok := roundsInterval(old, scaled[:8], 4); ok {
		t.Error("an interval from sequences of different lengths")
	}
}

func TestPercentile(t *testing.T) {
	var xs []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		xs = append(xs, time.Duration(i)*time.Millisecond)
	}
	orig := slices.Clone(xs)
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0.01, 1 * time.Millisecond},
		{0.50, 50 * time.Millisecond},
		{0.99, 99 * time.Millisecond},
		{0.995, 100 * time.Millisecond},
		{1, 100 * time.Millisecond},
	} {
		if got := percentile(xs, c.q); got != c.want {
			t.Errorf("percentile(1..100 ms, %v) = %v, want %v", c.q, got, c.want)
		}
	}
	if !slices.Equal(xs, orig) {
		t.Error("percentile reordered its input")
	}
	// Nearest rank on few values: p99 of 10 values is the largest.
	ten := []time.Duration{5, 1, 9, 3, 7, 2, 8, 4, 6, 10}
	if got := percentile(ten, 0.99); got != 10 {
		t.Errorf("p99 of 1..10 = %v, want 10", got)
	}
	if got := percentile(ten, 0.5); got != 5 {
		t.Errorf("p50 of 1..10 = %v, want 5", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %v", got)
	}
	if got := percentile([]time.Duration{7}, 0.99); got != 7 {
		t.Errorf("p99 of one value = %v", got)
	}
	s := summarize(ten)
	if s.N != 10 || s.P50 != 5 || s.P99 != 10 || s.Max != 10 {
		t.Errorf("summarize = %+v", s)
	}
	if got := median([]time.Duration{3, 1, 2}); got != 2 {
		t.Errorf("median of 3 = %v", got)
	}
	if got := median([]time.Duration{4, 1, 2, 3}); got != 2 { // (2+3)/2 in integer nanoseconds
		t.Errorf("median of 4 = %v", got)
	}
	m := medianLatency([]latency{{N: 1, P50: 1, P99: 9, Max: 9}, {N: 2, P50: 3, P99: 5, Max: 20}, {N: 3, P50: 2, P99: 7, Max: 10}})
	if m.N != 6 || m.P50 != 2 || m.P99 != 7 || m.Max != 10 {
		t.Errorf("medianLatency = %+v", m)
	}
}

// postAsks posts n typical ask messages straight to the fake, rendered as
// slackask renders them, for tests without a slackask process.
func postAsks(t *testing.T, fake *slackfake.Server, n int) []msgRef {
	t.Helper()
	api := slack.New(botToken, slack.OptionAPIURL(fake.APIURL()))
	var out []msgRef
	for i := range n {
		in := typicalAsk(i)
		id := fmt.Sprintf("abench%d", i)
		text, blks := blocks.Message(blocks.View{AskID: id, Rev: 1, Request: in.Request, Status: interaction.StatusPending,
			Progress: make([]interaction.Progress, len(in.Questions))})
		ch, ts, err := api.PostMessage(benchChannel, slack.MsgOptionText(text, false), slack.MsgOptionBlocks(blks...))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, msgRef{id: id, channel: ch, ts: ts})
	}
	return out
}

// TestAckSmoke runs the ack benchmark for 1 s at 50/s against an acker in
// this process (the floor's code), so it needs no build.
func TestAckSmoke(t *testing.T) {
	fake, err := newFake(slackfake.Config{PingInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs := postAsks(t, fake, 5)

	smCtx, stopSM := context.WithCancel(ctx)
	sm := socketmode.New(slack.New(botToken, slack.OptionAppLevelToken(appToken), slack.OptionAPIURL(fake.APIURL())))
	done := make(chan struct{})
	go func() {
		defer close(done)
		go func() { _ = sm.RunContext(smCtx) }()
		for {
			select {
			case <-smCtx.Done():
				return
			case evt := <-sm.Events:
				if evt.Request != nil && evt.Request.EnvelopeID != "" {
					_ = sm.Ack(*evt.Request)
				}
			}
		}
	}()
	defer func() { stopSM(); <-done }()
	if err := waitConnections(ctx, fake, 1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	res := runLoad(ctx, fake, 0, 50, time.Second, func(i int) func(context.Context) error { return selectAction(fake, msgs, i) })
	if res.errors > 0 || res.sent != 50 || res.lat.N != 50 {
		t.Fatalf("sent %d, acked %d, %d errors (first: %v)", res.sent, res.lat.N, res.errors, res.firstErr)
	}
	if res.lat.P50 <= 0 || res.lat.P99 < res.lat.P50 || res.lat.Max < res.lat.P99 || res.lat.Max > 3*time.Second {
		t.Fatalf("implausible latencies %+v", res.lat)
	}
}

// smokeBinaries builds slackask and the ackers into a test directory;
// it skips with -short.
func smokeBinaries(t *testing.T) (string, binaries) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds ./cmd/slackask and ./bench/floor; skipped with -short")
	}
	dir := t.TempDir()
	bins, err := buildBinaries(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, bins
}

// TestBenchSmoke builds slackask and the floor and runs the ack benchmark
// against both for 1 s at 50/s, with a few answer-latency samples. It is
// skipped with -short.
func TestBenchSmoke(t *testing.T) {
	dir, bins := smokeBinaries(t)
	cfg := quickConfig()
	cfg.rates, cfg.ackDur, cfg.warmup, cfg.pause, cfg.ackAsks, cfg.answers = []int{50}, time.Second, 200*time.Millisecond, 100*time.Millisecond, 5, 5
	r := &rig{cfg: cfg, dir: dir, bins: bins, logf: t.Logf}
	fake, err := newFake(slackfake.Config{PingInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := newAckResults()
	db := filepath.Join(dir, "smoke.db")
	payloads, err := r.ackSetup(ctx, fake, db, targetSlackask)
	if err != nil {
		t.Fatal(err)
	}
	if len(payloads) != 4*cfg.ackAsks {
		t.Fatalf("%d payloads captured", len(payloads))
	}
	for _, target := range []string{targetSlackask, targetFloor, targetWire} {
		if err := r.ackTarget(ctx, fake, target, db, payloads, res, ackRun{rates: cfg.rates, answers: true}); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		lr := res.runs[target][50][0]
		if lr.errors > 0 || lr.lat.N != 50 {
			t.Fatalf("%s: acked %d of 50, %d errors (first: %v)", target, lr.lat.N, lr.errors, lr.firstErr)
		}
	}
	ans, clicks := res.answers[targetSlackask], res.answersClick[targetSlackask]
	if len(ans) != 1 || ans[0].N != 5 || len(clicks) != 1 || clicks[0].P50 < ans[0].P50 {
		t.Fatalf("answer samples: %+v", res.answers)
	}
	if md := (&report{Ack: res, cfg: cfg, Reps: 1}).markdown(); len(md) == 0 {
		t.Fatal("empty report")
	}
}

func TestParseCallgrindTotal(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 15510943\n\nfl=(1) x\n", 15510943, true},
		{"events: Ir\nfn=(1) main\n1 5\ntotals: 42\n", 42, true},
		{"events: Ir\nfn=(1) main\n1 5\n", 0, false},
		{"summary: many\n", 0, false},
	} {
		got, err := parseCallgrindTotal(strings.NewReader(c.in))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseCallgrindTotal(%q) = %d, %v; want %d (ok %v)", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestCapacity(t *testing.T) {
	steps := []capStep{{Rate: 250, OK: true}, {Rate: 500, OK: true}, {Rate: 1000, OK: false}}
	if got := capacity(steps); got != 500 {
		t.Errorf("capacity = %d, want 500", got)
	}
	if got := capacity([]capStep{{Rate: 250, OK: false}}); got != 0 {
		t.Errorf("capacity of a first failure = %d, want 0", got)
	}
	if sustained(loadResult{sent: 10, lat: latency{N: 9, P99: time.Millisecond}}) {
		t.Error("a load with an unacked envelope counted as sustained")
	}
	if sustained(loadResult{sent: 10, lat: latency{N: 10, P99: capacityP99}}) {
		t.Error("a p99 of exactly the limit counted as sustained")
	}
	if !sustained(loadResult{sent: 10, lat: latency{N: 10, P99: capacityP99 - 1}}) {
		t.Error("a load under the limit not counted as sustained")
	}
}

// The A/B's scale levels alone (BENCH_ONLY=ab-scale) are reported without
// the ack rows they did not measure.
func TestABScaleOnlyReport(t *testing.T) {
	cfg := quickConfig()
	cfg.only = map[string]bool{"ab-scale": true}
	if cfg.runs("ab") || !cfg.runs("ab-scale") {
		t.Fatal("BENCH_ONLY=ab-scale should run the A/B's scale levels and not the rest of it")
	}
	ab := &abResults{Ack: newAckResults(), Level: 1000, Rates: cfg.abRates, Scale: map[string][]scaleLevel{
		targetOld:      {{Pending: 1000, RSSAsksKB: 40 * 1024, CreateCPU: time.Millisecond}},
		targetSlackask: {{Pending: 1000, RSSAsksKB: 42 * 1024, CreateCPU: 2 * time.Millisecond}},
	}}
	md := (&report{AB: ab, cfg: cfg, Reps: 1}).markdown()
	if !strings.Contains(md, "| RSS with 1000 pending asks | 40.0 MB | 42.0 MB | 1.05× |") {
		t.Fatalf("no RSS row in:\n%s", md)
	}
	if !strings.Contains(md, "| CPU per ask created (HTTP) | 1.00 ms | 2.00 ms | 2.00× |") {
		t.Fatalf("no row of CPU per ask created in:\n%s", md)
	}
	if strings.Contains(md, "ack p99") {
		t.Fatalf("ack rows without ack measurements in:\n%s", md)
	}
}

// The A/B's latencies in rounds of turns (abslices.go), with this build
// as both sides: every turn's acks are pooled into its build's result,
// each turn's p99 is kept, the answers add up, the report gives each
// round's ratio, and the target is judged on the turns' median p99, with
// its interval over the rounds; nothing a round staged is left.
func TestABSlicedSmoke(t *testing.T) {
	dir, bins := smokeBinaries(t)
	bins.old = bins.slackask
	cfg := quickConfig()
	cfg.warmup, cfg.pause, cfg.ackAsks = 200*time.Millisecond, 100*time.Millisecond, 5
	r := &rig{cfg: cfg, dir: dir, bins: bins, logf: t.Logf}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := r.abAckSliced(ctx, abSliceRun{slices: 4, rounds: 2, sliceDur: 300 * time.Millisecond, rates: []int{50}, answers: 2})
	if err != nil {
		t.Fatal(err)
	}
	// Each round's staged binaries and databases are gone with it.
	if left, _ := filepath.Glob(filepath.Join(dir, "ab-*")); len(left) > 0 {
		t.Fatalf("left behind by the rounds: %v", left)
	}
	for _, b := range []string{targetSlackask, targetOld} {
		runs := res.runs[b][50]
		if len(runs) != 1 || runs[0].errors > 0 || runs[0].lat.N != 4*15 || runs[0].sent != 4*15 {
			t.Fatalf("%s: %+v", b, runs)
		}
		if tp := res.turnP99[b][50]; len(tp) != 4 || slices.Contains(tp, 0) {
			t.Fatalf("%s: turns' p99s %v, want 4 of them", b, tp)
		}
		if tp := res.answerTurnP99[b]; len(tp) != 4 || slices.Contains(tp, 0) {
			t.Fatalf("%s: answer turns' p99s %v, want 4 of them", b, tp)
		}
		if a := res.answers[b]; len(a) != 1 || a[0].N != 8 {
			t.Fatalf("%s: answers %+v", b, a)
		}
	}
	ab := &abResults{Ack: res, Rates: []int{50}, Scale: map[string][]scaleLevel{}}
	md := (&report{AB: ab, cfg: cfg, Reps: 1}).markdown()
	if res.roundTurns != 2 {
		t.Fatalf("%d turns per round, want 2", res.roundTurns)
	}
	if !regexp.MustCompile(`Ack p99 at 50/s, new ÷ old, the median of the turns' p99s in each round: [0-9.]+×, [0-9.]+×\.`).MatchString(md) ||
		!regexp.MustCompile(`Answer p99, new ÷ old, the median of the turns' p99s in each round: [0-9.]+×, [0-9.]+×\.`).MatchString(md) {
		t.Fatalf("report without the rounds:\n%s", md)
	}
	if !regexp.MustCompile(`\| ack p99 at 50/s, median of the turns' p99s \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+× \(90 % interval over the rounds [0-9.]+–[0-9.]+×\) \|`).MatchString(md) {
		t.Fatalf("the target row without its interval over the rounds:\n%s", md)
	}
	if !strings.Contains(md, "| A/B: ack p99 at 50/s, median of the turns' p99s within 10 % of the old build |") ||
		strings.Contains(md, "| A/B: ack p99 at 50/s, all acks pooled within") ||
		!strings.Contains(md, "| A/B: answer p99, median of the turns' p99s within 10 % of the old build |") {
		t.Fatalf("the target is not the turns' median p99:\n%s", md)
	}
}
