package main

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Targets of issues 13 and 14. The benchmarks report them; they are not
// test assertions.
const (
	targetCPUVsBolt  = 1.5              // slackask's CPU per envelope ≤ 1.5 × Bolt's bare ack
	targetP50VsWire  = time.Millisecond // ack p50 within 1 ms of the read-and-ack-only client's
	targetABRatio    = 1.10             // the new build within 10 % of the old
	capacityTargetOf = "Bolt's bare-ack capacity"
)

type writer func(format string, args ...any)

var clientNames = map[string]string{
	targetSlackask: "slackask (journals every click before its ack, stores it after)",
	targetBolt:     "Bolt for JS (ack only)",
	targetFloor:    "bare slack-go (ack only)",
	targetWire:     "wire (read + ack only)",
	targetOld:      "slackask, old build",
}

// capacityMarkdown writes the capacity search, the CPU per envelope at
// each rate and the ack p50s against wire's.
func (r *report) capacityMarkdown(w writer) []target {
	c := r.Capacity
	if c == nil || len(c.steps) == 0 {
		return nil
	}
	var targets []target
	order := []string{targetSlackask, targetBolt, targetFloor, targetWire}
	w("### Capacity: the highest rate with ack p99 under %s ms\n\n", ms(capacityP99))
	w("Each client runs the rates %s envelopes/s in order, %v of open-loop load each (after a 1 s warm-up at 100/s, and once it is idle), and stops at the first rate where an ack p99 reached %s ms, an envelope went unacked or failed; %d repetition(s), clients in a rotated order. The envelopes are the ack benchmark's `block_actions` select changes on 100 pending asks; slackask appends each to its journal (a copy into the file's mapping), acks it, then stores the change. The load generator (the fake and its senders) runs on the same two cores: at the top rates it takes a core of its own.\n\n",
		joinInts(c.rates), r.cfg.capDur, ms(capacityP99), r.Reps)
	w("| client | capacity per repetition | median | first rate not sustained: p50 / p99 ms |\n|---|---|---:|---|\n")
	caps := map[string]float64{}
	for _, t := range order {
		searches := c.steps[t]
		if len(searches) == 0 {
			if e, ok := c.errs[t]; ok {
				w("| %s | could not run: %s | | |\n", clientNames[t], strings.SplitN(e, "\n", 2)[0])
			}
			continue
		}
		var per []string
		var vals []float64
		var fails []string
		for _, s := range searches {
			n := capacity(s)
			vals = append(vals, float64(n))
			cell := fmt.Sprint(n)
			if len(s) > 0 && s[len(s)-1].OK && n == c.rates[len(c.rates)-1] {
				cell += "+"
			}
			per = append(per, cell)
			if last := s[len(s)-1]; !last.OK {
				f := fmt.Sprintf("%d/s: %s / %s", last.Rate, ms(last.Lat.P50), ms(last.Lat.P99))
				if last.Errors > 0 || last.Lat.N < last.Sent {
					f += fmt.Sprintf(" (%d of %d acked, %d failed)", last.Lat.N, last.Sent, last.Errors)
				}
				fails = append(fails, f)
			}
		}
		caps[t] = median(vals)
		if len(fails) == 0 {
			fails = []string{"none: sustained every rate"}
		}
		w("| %s | %s | %.0f | %s |\n", clientNames[t], strings.Join(per, " / "), caps[t], strings.Join(fails, "; "))
	}
	w("\n\"+\": sustained the highest rate tried.\n\n")
	if s, ok := caps[targetSlackask]; ok {
		if b, ok := caps[targetBolt]; ok {
			targets = append(targets, tgt("capacity (ack p99 < 100 ms): slackask, journaling and storing every click, ≥ "+capacityTargetOf,
				fmt.Sprintf("%.0f/s against %.0f/s", s, b), s >= b))
		}
	}

	w("CPU time per envelope (ms; user+system of the client process during the load, from /proc/PID/stat, ÷ envelopes sent; median over the repetitions that reached the rate; \"*\": the rate was not sustained in at least one of them):\n\n")
	w("| envelopes/s | slackask | Bolt | bare slack-go | wire | slackask ÷ Bolt | driver (fake + senders) |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	worst, worstRate, compared := 0.0, 0, 0
	for _, rate := range c.rates {
		cpu := map[string]time.Duration{}
		cell := func(t string) string {
			steps := c.step(t, rate)
			if len(steps) == 0 {
				return "—"
			}
			var xs []time.Duration
			allOK := true
			for _, s := range steps {
				xs = append(xs, s.CPUPer)
				allOK = allOK && s.OK
			}
			cpu[t] = median(xs)
			out := ms(cpu[t])
			if !allOK {
				out += "*"
			}
			return out
		}
		sc, bc, fc, wc := cell(targetSlackask), cell(targetBolt), cell(targetFloor), cell(targetWire)
		var drv []time.Duration
		for _, t := range order {
			for _, s := range c.step(t, rate) {
				drv = append(drv, s.DriverPer)
			}
		}
		rc := "—"
		if s, ok := cpu[targetSlackask]; ok {
			if b, ok := cpu[targetBolt]; ok && b > 0 {
				x := ratio(s, b)
				rc = fmt.Sprintf("%.2f×", x)
				if bothSustained(c, rate) {
					compared++
					if x > worst {
						worst, worstRate = x, rate
					}
				}
			}
		}
		if len(drv) == 0 {
			continue
		}
		w("| %d | %s | %s | %s | %s | %s | %s |\n", rate, sc, bc, fc, wc, rc, ms(median(drv)))
	}
	w("\nThe process's counters tick every 10 ms: at %v per rate the smallest figures (a few tens of ms of CPU in all) carry ±10 ms of the client's CPU.\n\n", r.cfg.capDur)
	if compared > 0 {
		targets = append(targets, tgt(fmt.Sprintf("CPU per envelope ≤ %.1f× Bolt's bare ack at every rate both sustain", targetCPUVsBolt),
			fmt.Sprintf("at most %.2f× (at %d/s)", worst, worstRate), worst <= targetCPUVsBolt))
	}

	w("Ack latency at each rate (ms, p50 / p99, median over the repetitions; send → ack as the fake measures it):\n\n")
	w("| envelopes/s | slackask | wire | slackask p50 − wire p50 | Bolt | bare slack-go |\n|---:|---|---|---:|---|---|\n")
	worstGap, gapRate, gaps := time.Duration(math.MinInt64), 0, 0
	for _, rate := range c.rates {
		lat := map[string]latency{}
		cell := func(t string) string {
			steps := c.step(t, rate)
			if len(steps) == 0 {
				return "—"
			}
			var ls []latency
			for _, s := range steps {
				ls = append(ls, s.Lat)
			}
			lat[t] = medianLatency(ls)
			return fmt.Sprintf("%s / %s", ms(lat[t].P50), ms(lat[t].P99))
		}
		sc, wc, bc, fc := cell(targetSlackask), cell(targetWire), cell(targetBolt), cell(targetFloor)
		gap := "—"
		s, sok := lat[targetSlackask]
		wi, wok := lat[targetWire]
		if sok && wok {
			d := s.P50 - wi.P50
			gap = signedMs(d)
			if sustainedAll(c, targetSlackask, rate) && sustainedAll(c, targetWire, rate) {
				gaps++
				if d > worstGap {
					worstGap, gapRate = d, rate
				}
			}
		}
		if sc == "—" && wc == "—" && bc == "—" && fc == "—" {
			continue
		}
		w("| %d | %s | %s | %s | %s | %s |\n", rate, sc, wc, gap, bc, fc)
	}
	w("\n")
	if gaps > 0 {
		targets = append(targets, tgt("ack p50 within 1 ms of wire's (read + ack only) at every rate both sustain",
			fmt.Sprintf("at most %s ms (at %d/s)", signedMs(worstGap), gapRate), worstGap <= targetP50VsWire))
	}
	return targets
}

// bothSustained: slackask and Bolt sustained rate in every repetition
// that reached it.
func bothSustained(c *capacityResults, rate int) bool {
	return sustainedAll(c, targetSlackask, rate) && sustainedAll(c, targetBolt, rate)
}

func sustainedAll(c *capacityResults, t string, rate int) bool {
	steps := c.step(t, rate)
	for _, s := range steps {
		if !s.OK {
			return false
		}
	}
	return len(steps) > 0
}

func signedMs(d time.Duration) string {
	if d < 0 {
		return "−" + ms(-d)
	}
	return "+" + ms(d)
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, ", ")
}

// abMarkdown writes the A/B of the new build against the old one.
func (r *report) abMarkdown(w writer) []target {
	ab := r.AB
	if ab == nil || ab.Ack == nil {
		return nil
	}
	a := ab.Ack
	var targets []target
	w("### A/B: this build against the old one, in one run\n\n")
	w("The run is cut into %d rounds, and each round sets both builds up afresh, each with its own fake, its own database with its own %d posted asks, and its own process, the build set up first alternating. In a round both builds are measured at the same time, their work interleaved (bench/abslices.go), in turns that start once both are idle, the first build of each turn alternating: %d turns in all. Ack: the select changes of the capacity search, %v per turn and rate, sent as one stream that alternates between the builds, each getting the rate; all of a build's acks at a rate pooled into one p50 and p99, and each turn's own p99, whose median the ack targets judge; answer: %d asks per build in all, %d per turn, one ask at a time, each build's in turn, as in \"Answer latency\", judged the same way (with fewer than 100 per turn, a turn's p99 is its slowest). Resident memory: one scale level per build (%d pending asks created through the HTTP API, then %d long-polling callers), %d repetition(s). The new build journals each click before acking it and stores it after (issues 14.1 and 14); the old acked as soon as it had the envelope id.\n\n",
		a.rounds, r.cfg.ackAsks, a.rounds*a.roundTurns, r.cfg.abSliceDur, r.cfg.abAnswers*a.rounds*a.roundTurns, r.cfg.abAnswers, ab.Level, min(ab.Level, r.cfg.pollers), r.cfg.abScaleReps)
	w("| measure | old | new | new ÷ old |\n|---|---:|---:|---:|\n")
	row := func(what string, old, nw float64, unit string, target bool) {
		x := nw / old
		w("| %s | %s | %s | %.2f× |\n", what, fmtVal(old, unit), fmtVal(nw, unit), x)
		if target {
			targets = append(targets, tgt(fmt.Sprintf("A/B: %s within 10 %% of the old build", what), fmt.Sprintf("%.2f×", x), x <= targetABRatio))
		}
	}
	// p99Rows writes a p99's rows: the pooled p99 for reference, and the
	// median of the turns' p99s (oldTurns, newTurns) as the target, with
	// its 90 % interval over the rounds when there are two or more.
	p99Rows := func(what, pooledWhat string, oldPooled, newPooled time.Duration, oldTurns, newTurns []time.Duration) {
		row(what+", "+pooledWhat, msf(oldPooled), msf(newPooled), "ms", false)
		what += ", median of the turns' p99s"
		o, n := median(oldTurns), median(newTurns)
		x := medianRatio(oldTurns, newTurns)
		measured := fmt.Sprintf("%.2f×", x)
		if lo, hi, ok := roundsInterval(oldTurns, newTurns, a.roundTurns); ok {
			measured += fmt.Sprintf(" (90 %% interval over the rounds %.2f–%.2f×)", lo, hi)
		}
		w("| %s | %s | %s | %s |\n", what, fmtVal(msf(o), "ms"), fmtVal(msf(n), "ms"), measured)
		targets = append(targets, tgt(fmt.Sprintf("A/B: %s within 10 %% of the old build", what), measured, x <= targetABRatio))
	}
	for _, rate := range ab.Rates {
		o, _, ook := a.median(targetOld, rate)
		n, _, nok := a.median(targetSlackask, rate)
		if !ook || !nok {
			continue
		}
		row(fmt.Sprintf("ack p50 at %d/s", rate), msf(o.P50), msf(n.P50), "ms", false)
		p99Rows(fmt.Sprintf("ack p99 at %d/s", rate), "all acks pooled", o.P99, n.P99, a.turnP99[targetOld][rate], a.turnP99[targetSlackask][rate])
		ocpu, ncpu := cpuMedian(a, targetOld, rate), cpuMedian(a, targetSlackask, rate)
		if ocpu > 0 && ncpu > 0 {
			row(fmt.Sprintf("CPU per envelope at %d/s", rate), msf(ocpu), msf(ncpu), "ms", false)
		}
	}
	if o, n := a.answers[targetOld], a.answers[targetSlackask]; len(o) > 0 && len(n) > 0 {
		ol, nl := medianLatency(o), medianLatency(n)
		row("answer p50", msf(ol.P50), msf(nl.P50), "ms", false)
		p99Rows("answer p99", "all answers pooled", ol.P99, nl.P99, a.answerTurnP99[targetOld], a.answerTurnP99[targetSlackask])
	}
	if o, n := ab.Scale[targetOld], ab.Scale[targetSlackask]; len(o) > 0 && len(n) > 0 {
		pick := func(ls []scaleLevel, f func(scaleLevel) float64) float64 {
			var xs []float64
			for _, l := range ls {
				xs = append(xs, f(l))
			}
			return median(xs)
		}
		rss := func(l scaleLevel) float64 { return float64(l.RSSAsksKB) / 1024 }
		rssPolled := func(l scaleLevel) float64 { return float64(l.RSSKB) / 1024 }
		peak := func(l scaleLevel) float64 { return float64(l.HWMKB) / 1024 }
		creates := func(l scaleLevel) float64 { return l.CreatePerSec }
		row(fmt.Sprintf("RSS with %d pending asks", ab.Level), pick(o, rss), pick(n, rss), "MB", true)
		row(fmt.Sprintf("RSS with %d pending asks and a long-polling caller on each (settled)", ab.Level), pick(o, rssPolled), pick(n, rssPolled), "MB", false)
		row("peak RSS", pick(o, peak), pick(n, peak), "MB", false)
		row("asks created per second (HTTP)", pick(o, creates), pick(n, creates), "/s", false)
		createCPU := func(l scaleLevel) float64 { return msf(l.CreateCPU) }
		row("CPU per ask created (HTTP)", pick(o, createCPU), pick(n, createCPU), "ms", false)
		cut := func(l scaleLevel) float64 { return float64(l.PollsCut) }
		if oc, nc := pick(o, cut), pick(n, cut); oc+nc > 0 {
			w("| long-polling callers cut while connecting (of %d) | %.0f | %.0f | |\n", min(ab.Level, r.cfg.pollers), oc, nc)
		}
	}
	w("\n")
	if k := a.roundTurns; k > 0 {
		byRound := func(what string, old, nw []time.Duration) {
			if len(old) != len(nw) || len(old) <= k {
				return
			}
			var xs []string
			for i := 0; i+k <= len(old); i += k {
				xs = append(xs, fmt.Sprintf("%.2f×", medianRatio(old[i:i+k], nw[i:i+k])))
			}
			w("%s, new ÷ old, the median of the turns' p99s in each round: %s.\n", what, strings.Join(xs, ", "))
		}
		for _, rate := range ab.Rates {
			byRound(fmt.Sprintf("Ack p99 at %d/s", rate), a.turnP99[targetOld][rate], a.turnP99[targetSlackask][rate])
		}
		byRound("Answer p99", a.answerTurnP99[targetOld], a.answerTurnP99[targetSlackask])
	}
	w("\n")
	if len(a.turnP99) > 0 {
		w("Why the median of the turns' p99s: a turn's p99 is one of its slowest few acks, and a disturbance of a second or so sets it in whichever turns it hits; the median is not moved by a few such turns. The interval beside it comes from drawing the rounds again with replacement (bench/stats.go): how far the ratio moves with other setups and other minutes of the machine. The A/A runs (the same binary on both sides) that chose this method are in commit 18e8daf and in the history of BENCHMARKS.md.\n\n")
	}
	return targets
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtVal(v float64, unit string) string {
	switch unit {
	case "ms":
		return ms(time.Duration(v*float64(time.Millisecond))) + " ms"
	case "MB":
		return fmt.Sprintf("%.1f MB", v)
	}
	return fmt.Sprintf("%.0f%s", v, unit)
}

func cpuMedian(a *ackResults, t string, rate int) time.Duration {
	var xs []time.Duration
	for _, lr := range a.runs[t][rate] {
		xs = append(xs, lr.cpuPer())
	}
	return median(xs)
}

// callgrindMarkdown writes the instruction counts.
func (r *report) callgrindMarkdown(w writer) []target {
	if len(r.Callgrind) == 0 {
		return nil
	}
	w("### Instructions per envelope (valgrind --tool=callgrind)\n\n")
	w("Each client runs under callgrind as its own process, its Socket Mode connection to the fake in the driver (not counted). It is handed one envelope and its count is dumped (start-up, connecting, recovery, the first envelope's one-time work); then N more, one at a time, each after the previous one's ack (the same captured `block_actions` select changes as the capacity search; slackask journals each before its ack and stores it after), and the count since the first dump ÷ N is the count per envelope: everything the process did for them, its runtime included, in user space (not the kernel). The count does not depend on the machine's speed or load. Go clients run with `GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off` (callgrind aborts on the preemption signals, and valgrind 3.19 cannot decode RDTSCP).\n\n")
	w("| client | N | instructions, start-up + 1st envelope | instructions, N envelopes | per envelope |\n|---|---:|---:|---:|---:|\n")
	per := map[string]float64{}
	for _, c := range r.Callgrind {
		if len(c.PerEnvelope) == 0 {
			continue
		}
		per[c.Target] = median(c.PerEnvelope)
		var pe []string
		for _, x := range c.PerEnvelope {
			pe = append(pe, thousands(x))
		}
		w("| %s | %d | %s | %s | %s |\n", clientNames[c.Target], c.N, thousandsU(c.First), thousandsU(c.Long), strings.Join(pe, " / "))
	}
	w("\n")
	if s, ok := per[targetSlackask]; ok {
		if f, ok := per[targetFloor]; ok && f > 0 {
			w("slackask ÷ bare slack-go: %.2f× the instructions per envelope", s/f)
			if o, ok := per[targetOld]; ok && o > 0 {
				w("; new ÷ old build: %.2f×", s/o)
			}
			w(".\n\n")
		}
	}
	var asks []string
	for _, c := range r.Callgrind {
		if len(c.PerAsk) > 0 {
			var pa []string
			for _, x := range c.PerAsk {
				pa = append(pa, thousands(x))
			}
			asks = append(asks, fmt.Sprintf("| %s | %d | %s |", clientNames[c.Target], c.Asks, strings.Join(pa, " / ")))
		}
	}
	if len(asks) > 0 {
		w("Instructions per ask created: after the envelopes, the same process is sent asks one at a time through its HTTP API (`POST /v1/asks`, the README's three-question ask; each posts its message to the fake before it answers), and the count since the previous dump ÷ the asks:\n\n| client | asks | per ask |\n|---|---:|---:|\n%s\n\n", strings.Join(asks, "\n"))
	}
	w("The dumps of the N envelopes are kept in `bench/results/callgrind.CLIENT.REP.out`; their split by function (`callgrind_annotate`) is not to be trusted for Go, whose goroutine stack switches confuse callgrind's call tracking (self costs that add up to more than the total).\n\n")
	return nil
}

func thousands(x float64) string { return thousandsU([]uint64{uint64(math.Round(x))}) }

func thousandsU(xs []uint64) string {
	var out []string
	for _, x := range xs {
		s := fmt.Sprint(x)
		var b strings.Builder
		for i, ch := range s {
			if i > 0 && (len(s)-i)%3 == 0 {
				b.WriteByte(',')
			}
			b.WriteRune(ch)
		}
		out = append(out, b.String())
	}
	return strings.Join(out, " / ")
}
