package sqlite

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/storetest"
)

func BenchmarkCreate(b *testing.B) { storetest.BenchCreate(b, openAt(b, tempPath(b))) }

func BenchmarkUpdate(b *testing.B) { storetest.BenchUpdate(b, openAt(b, tempPath(b))) }

// BenchmarkUpdateEvent is BenchmarkUpdate with an event emitted by each
// update, as most of the lifecycle's writes do: the cost of the events
// log's row and index entry in the same transaction.
func BenchmarkUpdateEvent(b *testing.B) {
	s := openAt(b, tempPath(b))
	ctx := context.Background()
	if _, _, err := s.Create(ctx, storetest.BenchRecord("ask", time.Now())); err != nil {
		b.Fatal(err)
	}
	by := &interaction.User{ID: "U0123456789", Name: "alice"}
	for b.Loop() {
		if _, err := s.Update(ctx, "ask", func(r *store.Record) error {
			r.Rev++
			r.Emit(store.EventResponse, by, map[string]any{"user": by, "answer": map[string]any{"answers": []any{}}})
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPendingLoad10k is a restart with 10,000 asks in flight: Open and
// Pending, then Close.
func BenchmarkPendingLoad10k(b *testing.B) {
	const n = 10_000
	ctx := context.Background()
	path := tempPath(b)
	s, err := Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := range n {
		if _, _, err := s.Create(ctx, storetest.BenchRecord(fmt.Sprintf("ask-%08d", i), start.Add(time.Duration(i)*time.Millisecond))); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("inserted %d asks in %v", n, time.Since(start))
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s, err := Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		rs, err := s.Pending(ctx)
		if err != nil || len(rs) != n {
			b.Fatalf("Pending = %d, %v", len(rs), err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(fi.Size())/n, "dbbytes/ask")
}

// BenchmarkUpdateLatency reports the spread of single Updates, one after
// another on 300 records (as the answer benchmark drives them): p50, p99
// and the slowest, where WAL checkpoints show.
func BenchmarkUpdateLatency(b *testing.B) {
	s := openAt(b, tempPath(b))
	ctx := context.Background()
	now := time.Now()
	for i := range 300 {
		if _, _, err := s.Create(ctx, storetest.BenchRecord(fmt.Sprintf("ask-%04d", i), now)); err != nil {
			b.Fatal(err)
		}
	}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		t0 := time.Now()
		if _, err := s.Update(ctx, fmt.Sprintf("ask-%04d", i%300), func(r *store.Record) error { r.Rev++; return nil }); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), "max-µs")
}

// BenchmarkClickUpdate is the click path: 10,000 pending asks, people
// clicking on the newest 100 of them, each click one Update that records
// a selection. It reports the process's CPU time per click besides the
// wall time, which the other work on a shared machine blurs.
func BenchmarkClickUpdate(b *testing.B) {
	const n, clicked = 10_000, 100
	s := openAt(b, tempPath(b))
	ctx := context.Background()
	now := time.Now()
	for i := range n {
		if _, _, err := s.Create(ctx, storetest.BenchRecord(fmt.Sprintf("ask-%05d", i), now)); err != nil {
			b.Fatal(err)
		}
	}
	labels := []string{"dev", "staging", "prod"}
	var lat []time.Duration
	i := 0
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		i++
		id := fmt.Sprintf("ask-%05d", n-1-i%clicked)
		t0 := time.Now()
		if _, err := s.Update(ctx, id, func(r *store.Record) error {
			if len(r.Progress) == 0 {
				r.Progress = make([]interaction.Progress, len(r.Questions))
			}
			r.Progress[1].Selected = labels[:1+i%3]
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(len(lat)), "cpu-µs/op")
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
