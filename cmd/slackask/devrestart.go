package main

import (
	"context"
	"fmt"
	"time"

	"github.com/slackask/slackask/interaction"
)

// devRestartNote is shown on asks ended because the emulator restarted.
const devRestartNote = "the dev emulator restarted"

// endOrphans withdraws, with devRestartNote, every ask created before
// before that is still pending, and returns how many it ended.
func endOrphans(ctx context.Context, svc interaction.AskService, before time.Time) (int, error) {
	n := 0
	for {
		asks, err := svc.List(ctx, interaction.ListFilter{Status: interaction.StatusPending, Before: before, Limit: 100})
		if err != nil || len(asks) == 0 {
			return n, err
		}
		for _, a := range asks { // newest first
			if _, err = interaction.WithdrawNoted(ctx, svc, a.ID, devRestartNote); err != nil {
				return n, fmt.Errorf("withdraw %s: %w", a.ID, err)
			}
			n++
			before = a.CreatedAt
		}
	}
}
