package postgres

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/postgres/pgtest"
	"github.com/slackask/slackask/store/storetest"
)

func BenchmarkCreate(b *testing.B) { storetest.BenchCreate(b, openURL(b, pgtest.URL(b))) }

func BenchmarkUpdate(b *testing.B) { storetest.BenchUpdate(b, openURL(b, pgtest.URL(b))) }

// BenchmarkClaimDue claims one due record per call out of many, as the
// lifecycle's timer loop does.
func BenchmarkClaimDue(b *testing.B) {
	s := openURL(b, pgtest.URL(b))
	ctx := context.Background()
	now := time.Now()
	for i := range 1000 {
		r := storetest.BenchRecord(fmt.Sprintf("ask-%08d", i), now)
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
				if _, _, err := s.Create(ctx, storetest.BenchRecord(fmt.Sprintf("ask-%02d", i), time.Now())); err != nil {
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
