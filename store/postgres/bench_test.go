package postgres

import (
	"context"
	"fmt"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/proccpu"
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

// BenchmarkUpdateCPU updates 64 records in turn, as clicks on many asks
// do, and reports the CPU each Update costs this process (getrusage: the
// store, pgx, the LISTEN reader) and the PostgreSQL backends serving the
// Store (found by application_name, read from /proc: the pool's and the
// LISTEN connection's), and its round trips. redraw is an announced write
// of the whole record; pick a person's pick, merged into the row
// (merge.go). Run it with -benchtime 3000x or more: /proc counts in 10 ms
// ticks.
func BenchmarkUpdateCPU(b *testing.B) {
	for _, kind := range []struct {
		name string
		fn   func(i int) func(*store.Record) error
	}{
		{"redraw", func(i int) func(*store.Record) error {
			return func(r *store.Record) error {
				r.Rev++
				r.Synced = i%2 == 0
				return nil
			}
		}},
		{"pick", func(i int) func(*store.Record) error {
			return func(r *store.Record) error {
				for len(r.Progress) < len(r.Questions) {
					r.Progress = append(r.Progress, interaction.Progress{})
				}
				r.Progress[0] = interaction.Progress{Selected: []string{[]string{"Approve", "Reject"}[i/64%2]}}
				r.Quiet = true
				return nil
			}
		}},
	} {
		b.Run(kind.name, func(b *testing.B) { benchUpdateCPU(b, kind.fn) })
	}
}

func benchUpdateCPU(b *testing.B, fn func(i int) func(*store.Record) error) {
	u, err := url.Parse(pgtest.URL(b))
	if err != nil {
		b.Fatal(err)
	}
	app := fmt.Sprintf("slackask_bench_%d", time.Now().UnixNano())
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	s := openURL(b, u.String())
	ctx := context.Background()
	const records = 64
	for i := range records {
		if _, _, err := s.Create(ctx, storetest.BenchRecord(fmt.Sprintf("ask-%02d", i), time.Now())); err != nil {
			b.Fatal(err)
		}
	}
	backends := func() time.Duration {
		rows, err := s.pool.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
		if err != nil {
			b.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			b.Fatal(err)
		}
		var t time.Duration
		for _, pid := range pids {
			t += proccpu.Of(int(pid))
		}
		return t
	}
	self := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b0, c0, t0 := backends(), self(), s.RoundTrips()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Update(ctx, fmt.Sprintf("ask-%02d", i%records), fn(i)); err != nil {
			b.Fatal(err)
		}
	}
	trips := s.RoundTrips() - t0 // before the backends' read, a statement too
	c1 := self()
	b1 := backends()
	n := float64(b.N)
	b.ReportMetric(float64((c1-c0).Microseconds())/n, "client-cpu-µs/op")
	b.ReportMetric(float64((b1-b0).Microseconds())/n, "server-cpu-µs/op")
	b.ReportMetric(float64(trips)/n, "round-trips/op")
}
