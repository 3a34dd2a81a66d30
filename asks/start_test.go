package asks

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store/memory"
)

// openingSurface is a surface that opens when the test says so (as the
// Slack adapter opens once auth.test answered).
type openingSurface struct {
	*surface
	opened chan struct{}
}

func (o openingSurface) Opened() <-chan struct{} { return o.opened }

// TestStartWaitsForTheSurfaceToOpen: Start returns at once; recovery (here:
// posting an ask an earlier process stored and never posted) waits for
// the surface to open; Close stops the work and waits for it.
func TestStartWaitsForTheSurfaceToOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memory.New()
		rec := Record{Ask: interaction.Ask{ID: "aunposted", Status: interaction.StatusPending, Questions: twoQuestions().Questions,
			Channel: chanID, CreatedAt: time.Now().Add(-time.Hour)}, Rev: 1, Progress: make([]interaction.Progress, 2)}
		if _, _, err := st.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		surf := openingSurface{newSurface(), make(chan struct{})}
		svc, err := New(Config{Store: st, Surface: surf, DefaultChannel: chanID, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := svc.Start(ctx); err == nil {
			t.Fatal("a second Start did not fail")
		}
		synctest.Wait() // every goroutine of the service is blocked
		select {
		case <-svc.recovered:
			t.Fatal("recovered before the surface opened")
		default:
		}
		if n := surf.count(&surf.posts, rec.ID); n != 0 {
			t.Fatalf("%d posts before the surface opened", n)
		}
		close(surf.opened)
		<-svc.recovered
		synctest.Wait()
		if n := surf.count(&surf.posts, rec.ID); n != 1 {
			t.Fatalf("%d posts after the surface opened, want 1", n)
		}
		if err := svc.Close(); err != nil {
			t.Fatal(err)
		}
		if err := svc.Close(); err != nil { // idempotent
			t.Fatal(err)
		}
	})
}

// TestCloseWithoutStart: a service that never started closes at once, and
// one whose Start ctx ended before its surface opened stops too.
func TestCloseWithoutStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc, err := New(Config{Store: memory.New(), Surface: newSurface(), DefaultChannel: chanID, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if err := svc.Close(); err != nil {
			t.Fatal(err)
		}
		surf := openingSurface{newSurface(), make(chan struct{})}
		svc, err = New(Config{Store: memory.New(), Surface: surf, DefaultChannel: chanID, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if err := svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := svc.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
