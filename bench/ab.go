package main

import (
	"context"
	"fmt"
)

// abResults is the A/B of the new build against BENCH_OLD_BIN: ack
// latency and answer latency with the two builds taking turns in short
// slices (abslices.go), and one scale level (pending asks, resident
// memory) per build and repetition, alternating.
type abResults struct {
	Ack   *ackResults             `json:"-"`
	Scale map[string][]scaleLevel // per build
	Level int                     // pending asks of the scale levels
	Rates []int
}

// abBench runs the A/B. Both builds run the same loads at the same rates,
// in turns (old first in every other turn). With scaleOnly it
// runs only the scale levels (BENCH_ONLY=ab-scale).
func (r *rig) abBench(ctx context.Context, scaleOnly bool) (*abResults, error) {
	res := &abResults{Scale: map[string][]scaleLevel{}, Level: r.cfg.abLevel, Rates: r.cfg.abRates}
	builds := []string{targetSlackask, targetOld}
	res.Ack = newAckResults() // stays empty with scaleOnly: no ack rows
	if !scaleOnly {
		ack, err := r.abAckSliced(ctx, abSliceRun{slices: r.cfg.abSlices, rounds: r.cfg.abRounds, sliceDur: r.cfg.abSliceDur, rates: r.cfg.abRates, answers: r.cfg.abAnswers})
		res.Ack = ack
		if err != nil {
			return res, err
		}
	}
	if r.cfg.abLevel <= 0 {
		return res, nil
	}
	for rep := range r.cfg.abScaleReps {
		for i := range builds {
			b := builds[(i+rep)%len(builds)]
			r.logf("  A/B scale: %s with %d pending asks", b, r.cfg.abLevel)
			lvl, _, err := r.scaleLevel(ctx, r.cfg.abLevel, false, b)
			if err != nil {
				return res, fmt.Errorf("A/B scale %s: %w", b, err)
			}
			res.Scale[b] = append(res.Scale[b], lvl)
		}
	}
	return res, nil
}
