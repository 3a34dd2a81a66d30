package main

import (
	"fmt"
	"math"
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
