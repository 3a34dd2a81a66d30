package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// BenchRecord is a typical pending ask for the stores' benchmarks: three
// questions with options, one with a detail paragraph, an agent, a
// deadline and a reminder, so that the stores' figures compare.
func BenchRecord(id string, created time.Time) store.Record {
	expires := created.Add(time.Hour)
	return store.Record{
		Ask: interaction.Ask{
			ID:     id,
			Status: interaction.StatusPending,
			Questions: []interaction.Question{
				{
					ID: "plan", Question: "Approve the migration plan?", Header: "Plan review",
					Detail:  "1. Stop the writers.\n2. Copy the table in batches of 10k rows.\n3. Switch reads, then writes.\n4. Drop the old table after a day.",
					Options: []interaction.Option{{Label: "Approve"}, {Label: "Reject", Description: "explain in Other"}},
					Intent:  &interaction.Intent{Kind: interaction.IntentPlanReview, Approve: "Approve"},
				},
				{
					ID: "env", Question: "Which environments?", MultiSelect: true,
					Options: []interaction.Option{{Label: "dev"}, {Label: "staging"}, {Label: "prod", Description: "needs a window"}},
				},
				{
					ID: "when", Question: "When should it run?",
					Options: []interaction.Option{{Label: "now"}, {Label: "tonight"}, {Label: "weekend"}},
				},
			},
			Agent:      &interaction.Agent{ID: "deploy-bot", Name: "Deploy bot"},
			Channel:    "C0123456789",
			TS:         "1700000000.000100",
			CreatedAt:  created,
			ExpiresAt:  &expires,
			Responders: []string{"U0123456789", "S0123456789"},
		},
		TeamID:   "T0123456789",
		AppID:    "A0123456789",
		Synced:   true,
		RemindAt: created.Add(30 * time.Minute),
	}
}

// BenchCreate measures Create of new records into st.
func BenchCreate(b *testing.B, s store.Store) {
	ctx := context.Background()
	now := time.Now()
	i := 0
	for b.Loop() {
		i++
		if _, _, err := s.Create(ctx, BenchRecord(fmt.Sprintf("ask-%08d", i), now.Add(time.Duration(i)))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchUpdate measures Update of one record of st.
func BenchUpdate(b *testing.B, s store.Store) {
	ctx := context.Background()
	if _, _, err := s.Create(ctx, BenchRecord("ask", time.Now())); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Update(ctx, "ask", func(r *store.Record) error { r.Rev++; return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
