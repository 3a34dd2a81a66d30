package main

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
)

func TestPruneKeepsRetention(t *testing.T) {
	st := memory.New()
	c := clock.NewFake(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))
	old, recent := c.Now().Add(-31*24*time.Hour), c.Now().Add(-29*24*time.Hour)
	for id, ended := range map[string]*time.Time{"aold": &old, "arecent": &recent, "apending": nil} {
		rec := store.Record{Ask: interaction.Ask{ID: id, Status: interaction.StatusPending, CreatedAt: old}}
		if ended != nil {
			rec.Status, rec.EndedAt = interaction.StatusAnswered, ended
		}
		if _, _, err := st.Create(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { prune(ctx, st, 30*24*time.Hour, c, zerolog.Nop()); close(done) }()
	waitGone := func(id string) {
		t.Helper()
		for i := 0; i < 200; i++ {
			if _, err := st.Get(t.Context(), id); err != nil {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatalf("%s not pruned", id)
	}
	waitGone("aold")
	for _, id := range []string{"arecent", "apending"} {
		if _, err := st.Get(t.Context(), id); err != nil {
			t.Fatalf("%s pruned too early", id)
		}
	}
	// The first pass deleted aold; advance once prune waits for the
	// hourly pass (advancing before it has asked the clock would be lost).
	for i := 0; c.Waiters() == 0; i++ {
		if i == 200 {
			t.Fatal("prune never waited for its next pass")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.Advance(2 * 24 * time.Hour) // the hourly pass catches up
	waitGone("arecent")
	if _, err := st.Get(t.Context(), "apending"); err != nil {
		t.Fatal("a pending ask was pruned")
	}
	cancel()
	<-done
}
