package asks

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
	"github.com/slackask/slackask/store/postgres"
	"github.com/slackask/slackask/store/postgres/pgtest"
	"github.com/slackask/slackask/store/sqlite"
)

// BenchmarkEscalationStepsAtScale: 10,000 pending asks (created by 16
// callers at once), each with one escalation step due 30 to 50 s after
// the start (90 to 110 s on PostgreSQL, whose creates take longer), spread
// evenly, on one store; the service is stopped halfway through the steps
// and a new one started on the same store at once (a restart mid-way). It reports how
// late each step fired (firedAt minus its time; for steps due while no
// service ran, minus the restart), how many fired, and how many notices
// were posted more than once (must be 0). Real time: about 65 s a run.
// Run with -benchtime=1x.
func BenchmarkEscalationStepsAtScale(b *testing.B) {
	for _, kind := range []string{"memory", "sqlite", "postgres"} {
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				var st store.Store = memory.New()
				switch kind {
				case "sqlite":
					s, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"))
					if err != nil {
						b.Fatal(err)
					}
					st = s
				case "postgres":
					s, err := postgres.Open(context.Background(), pgtest.URL(b)) // skips without SLACKASK_TEST_DATABASE_URL
					if err != nil {
						b.Fatal(err)
					}
					st = s
				}
				base := 30 * time.Second
				if kind == "postgres" {
					base = 90 * time.Second // 10,000 creates take this server longer than 30 s
				}
				benchSteps(b, st, 10_000, base)
				_ = st.Close()
			}
		})
	}
}

func benchSteps(b *testing.B, st store.Store, n int, base time.Duration) {
	ns := &noticeSurface{surface: newSurface()}
	newSvc := func() *Service {
		svc, err := New(Config{Store: st, Surface: ns, DefaultChannel: chanID, Logger: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		if err := svc.Start(context.Background()); err != nil {
			b.Fatal(err)
		}
		return svc
	}
	svc := newSvc()
	start := time.Now()
	ids := make([]string, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				// Step i is due at start + 30 s + i·(20 s / n), whenever
				// its ask was created.
				due := start.Add(base + time.Duration(i)*20*time.Second/time.Duration(n))
				ask, err := svc.Create(context.Background(), interaction.AskInput{Request: twoQuestions(), Responders: []string{alice},
					Escalation: []interaction.EscalationStep{{After: interaction.Duration(time.Until(due)), Responders: []string{bob}}}})
				if err != nil {
					b.Error(err)
					continue
				}
				ids[i] = ask.ID
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	created := time.Since(start)
	if b.Failed() {
		return
	}
	time.Sleep(time.Until(start.Add(base + 10*time.Second)))
	_ = svc.Close()
	restart := time.Now()
	svc = newSvc()
	defer svc.Close()
	deadline := start.Add(base + 30*time.Second)
	for len(ns.all()) < n && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // a second notice would come by now
	var late []time.Duration
	fired := 0
	for _, id := range ids {
		rec, err := st.Get(context.Background(), id)
		if err != nil {
			b.Fatal(err)
		}
		f := rec.Escalation[0].FiredAt
		if f == nil {
			continue
		}
		fired++
		due := stepAt(rec, 0)
		if due.Before(restart) && f.After(restart) {
			due = restart // due while no service ran
		}
		late = append(late, f.Sub(due))
	}
	dups, over, overAtRestart := 0, 0, 0
	for _, id := range ids {
		rec, _ := st.Get(context.Background(), id)
		if f := rec.Escalation[0].FiredAt; f != nil && f.Sub(stepAt(rec, 0)) > time.Second {
			over++
			if d := stepAt(rec, 0); d.After(restart.Add(-time.Second)) && d.Before(restart.Add(2*time.Second)) || d.Before(restart) {
				overAtRestart++
			}
		}
	}
	per := map[string]int{}
	ns.nmu.Lock()
	for _, x := range ns.byAsk {
		per[x]++
	}
	ns.nmu.Unlock()
	for _, c := range per {
		if c > 1 {
			dups++
		}
	}
	slices.Sort(late)
	q := func(p float64) float64 {
		if len(late) == 0 {
			return 0
		}
		return float64(late[min(len(late)-1, int(p*float64(len(late))))].Milliseconds())
	}
	b.ReportMetric(float64(fired), "fired")
	b.ReportMetric(float64(dups), "twice")
	b.ReportMetric(q(0.5), "late-p50-ms")
	b.ReportMetric(q(0.99), "late-p99-ms")
	b.ReportMetric(q(1), "late-max-ms")
	b.ReportMetric(created.Seconds(), "create-s")
	b.ReportMetric(float64(over), "over-1s")
	b.ReportMetric(float64(overAtRestart), "over-1s-at-restart")
	b.Logf("%d asks: %d steps fired, %d noticed twice; late p50 %.0f ms, p99 %.0f ms, max %.0f ms; %d over 1 s (%d at the restart); created in %.1f s",
		n, fired, dups, q(0.5), q(0.99), q(1), over, overAtRestart, created.Seconds())
	if fired != n || dups != 0 {
		b.Errorf("%d of %d steps fired, %d noticed twice", fired, n, dups)
	}
}
