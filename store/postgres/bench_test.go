package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/postgres/pgtest"
)

// benchRecord is store/sqlite's: a typical pending ask with three
// questions, an agent, a deadline and a reminder, so that the two stores'
// figures compare.
func benchRecord(id string, created time.Time) store.Record {
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

func BenchmarkCreate(b *testing.B) {
	s := openURL(b, pgtest.URL(b))
	ctx := context.Background()
	now := time.Now()
	i := 0
	for b.Loop() {
		i++
		if _, _, err := s.Create(ctx, benchRecord(fmt.Sprintf("ask-%08d", i), now.Add(time.Duration(i)))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkUpdate(b *testing.B) {
	s := openURL(b, pgtest.URL(b))
	ctx := context.Background()
	if _, _, err := s.Create(ctx, benchRecord("ask", time.Now())); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.Update(ctx, "ask", func(r *store.Record) error { r.Rev++; return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimDue claims one due record per call out of many, as the
// lifecycle's timer loop does.
func BenchmarkClaimDue(b *testing.B) {
	s := openURL(b, pgtest.URL(b))
	ctx := context.Background()
	now := time.Now()
	for i := range 1000 {
		r := benchRecord(fmt.Sprintf("ask-%08d", i), now)
		r.WakeAt = now.Add(-time.Duration(i) * time.Millisecond)
		if _, _, err := s.Create(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
	at := now
	for b.Loop() {
		// A claim moves its record a millisecond past the claim, a
		// second before the next one: all 1,000 stay due, and each call
		// picks the earliest of them.
		at = at.Add(time.Second)
		if rs, err := s.ClaimDue(ctx, at, time.Millisecond, 1); err != nil || len(rs) != 1 {
			b.Fatalf("ClaimDue = %d, %v", len(rs), err)
		}
	}
}

// BenchmarkUpdateParallel updates many records at once, each update
// emitting no event or one: the cost of the counter that orders events'
// commits (eventsCTE), which writes with events take one at a time.
func BenchmarkUpdateParallel(b *testing.B) {
	for _, events := range []int{0, 1} {
		b.Run(fmt.Sprintf("events=%d", events), func(b *testing.B) {
			s := openURL(b, pgtest.URL(b))
			ctx := context.Background()
			const records = 64
			for i := range records {
				if _, _, err := s.Create(ctx, benchRecord(fmt.Sprintf("ask-%02d", i), time.Now())); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				id := fmt.Sprintf("ask-%02d", next.Add(1)%records)
				for pb.Next() {
					if _, err := s.Update(ctx, id, func(r *store.Record) error {
						r.Rev++
						if events > 0 {
							r.Emit(store.EventNotified, nil, map[string]string{"user": "U0123456789", "how": "dm"})
						}
						return nil
					}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
