package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// percentile returns the nearest-rank q-quantile (0 < q <= 1) of xs: the
// smallest value such that at least q of the values are at or below it.
// xs need not be sorted; it is not modified. Zero for no values.
func percentile(xs []time.Duration, q float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return rank(s, q)
}

// rank is percentile on sorted values.
func rank(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// latency summarises one run's samples.
type latency struct {
	N             int
	P50, P99, Max time.Duration
}

func summarize(xs []time.Duration) latency {
	if len(xs) == 0 {
		return latency{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return latency{N: len(s), P50: rank(s, 0.50), P99: rank(s, 0.99), Max: s[len(s)-1]}
}

// medianLatency is the per-field median of repeated runs (N is summed).
func medianLatency(runs []latency) latency {
	var out latency
	var p50, p99, mx []time.Duration
	for _, r := range runs {
		out.N += r.N
		p50, p99, mx = append(p50, r.P50), append(p99, r.P99), append(mx, r.Max)
	}
	out.P50, out.P99, out.Max = median(p50), median(p99), median(mx)
	return out
}

// median is the median of xs (the mean of the middle two for an even
// count), 0 for none.
func median[T time.Duration | float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ms formats a duration in milliseconds with a precision that suits it.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f == 0:
		return "0"
	case f < 1:
		return fmt.Sprintf("%.3f", f)
	case f < 10:
		return fmt.Sprintf("%.2f", f)
	case f < 100:
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprintf("%.0f", f)
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

func passMiss(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// roundsInterval is a 90 % bootstrap interval of medianRatio(old, nw)
// for turns in rounds of k: rounds, each a build's k turns with the
// other's same k turns, are drawn with replacement, as many as there are,
// 2,000 times, and the 5th and 95th percentiles of the ratios returned.
// Rounds, not turns, are drawn because a round's setups are what the
// turns of a round share (abslices.go). The draws are seeded, so one
// run's report gives one interval. ok is false with fewer than two whole
// rounds, or unequal sequences.
func roundsInterval(old, nw []time.Duration, k int) (lo, hi float64, ok bool) {
	if k <= 0 || len(old) != len(nw) || len(old) < 2*k {
		return 0, 0, false
	}
	rounds := len(old) / k
	rng := rand.New(rand.NewPCG(1, 2))
	ratios := make([]float64, 0, 2000)
	var o, n []time.Duration
	for range 2000 {
		o, n = o[:0], n[:0]
		for range rounds {
			i := rng.IntN(rounds) * k
			o, n = append(o, old[i:i+k]...), append(n, nw[i:i+k]...)
		}
		ratios = append(ratios, medianRatio(o, n))
	}
	slices.Sort(ratios)
	return ratios[len(ratios)*5/100], ratios[len(ratios)*95/100], true
}

// medianRatio is median(nw) ÷ median(old).
func medianRatio(old, nw []time.Duration) float64 { return ratio(median(nw), median(old)) }
