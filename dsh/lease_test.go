package dsh

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/store/memory"
)

// countingRunner is a bridge that counts how many run at once.
type countingRunner struct {
	running, maxRunning *atomic.Int64
	name                string
	ran                 *sync.Map
}

func (r countingRunner) Run(ctx context.Context) error {
	n := r.running.Add(1)
	for {
		m := r.maxRunning.Load()
		if n <= m || r.maxRunning.CompareAndSwap(m, n) {
			break
		}
	}
	r.ran.Store(r.name, true)
	<-ctx.Done()
	r.running.Add(-1)
	return nil
}

func (countingRunner) Ready(context.Context) error { return nil }

// flakyLeaser fails every call while broken, as a replica cut off from
// the database (or dead) does.
type flakyLeaser struct {
	Leaser
	broken atomic.Bool
}

func (f *flakyLeaser) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if f.broken.Load() {
		return false, errors.New("connection refused")
	}
	return f.Leaser.Lease(ctx, name, holder, ttl)
}

// Two replicas on one store run the bridge one at a time; when the holder
// stops renewing, the other takes over within the TTL.
func TestLeasedRunsOneBridgeAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		defer st.Close()
		var running, maxRunning atomic.Int64
		var ran sync.Map
		const ttl = 15 * time.Second
		stores := []*flakyLeaser{{Leaser: st}, {Leaser: st}}
		leased := make([]*Leased, 2)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		for i, name := range []string{"a", "b"} {
			leased[i] = &Leased{Store: stores[i], Name: "dsh-bridge", Holder: name, TTL: ttl, Logger: zerolog.Nop(),
				New: func() (Runner, error) {
					return countingRunner{running: &running, maxRunning: &maxRunning, name: name, ran: &ran}, nil
				}}
			wg.Go(func() { _ = leased[i].Run(ctx) })
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if running.Load() != 1 || maxRunning.Load() != 1 {
			t.Fatalf("%d bridges running (at most %d at once), want 1", running.Load(), maxRunning.Load())
		}
		holder, standby := 0, 1
		if leased[1].Holding() {
			holder, standby = 1, 0
		}
		stores[holder].broken.Store(true) // the holder is cut off
		time.Sleep(ttl + ttl/3)
		synctest.Wait()
		if !leased[standby].Holding() || leased[holder].Holding() || running.Load() != 1 || maxRunning.Load() != 1 {
			t.Fatalf("after the holder was cut off: standby holding %v, old holder %v, %d running (max %d)",
				leased[standby].Holding(), leased[holder].Holding(), running.Load(), maxRunning.Load())
		}
		cancel()
		wg.Wait()
		if running.Load() != 0 {
			t.Fatalf("%d bridges still running", running.Load())
		}
	})
}

// A holder that stops cleanly releases the lease: the other replica takes
// over at its next try, not after the TTL.
func TestLeasedHandsOverOnStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := memory.New()
		defer st.Close()
		var running, maxRunning atomic.Int64
		var ran sync.Map
		const ttl = time.Minute
		mk := func(name string) *Leased {
			return &Leased{Store: st, Name: "dsh-bridge", Holder: name, TTL: ttl, Logger: zerolog.Nop(),
				New: func() (Runner, error) {
					return countingRunner{running: &running, maxRunning: &maxRunning, name: name, ran: &ran}, nil
				}}
		}
		a, b := mk("a"), mk("b")
		actx, stopA := context.WithCancel(context.Background())
		aDone := make(chan struct{})
		go func() { defer close(aDone); _ = a.Run(actx) }()
		synctest.Wait()
		if !a.Holding() {
			t.Fatal("the first replica does not run the bridge")
		}
		bctx, stopB := context.WithCancel(context.Background())
		bDone := make(chan struct{})
		go func() { defer close(bDone); _ = b.Run(bctx) }()
		stopA()
		<-aDone
		time.Sleep(ttl / 3)
		synctest.Wait()
		if !b.Holding() || maxRunning.Load() != 1 {
			t.Fatalf("b holding %v (max running %d)", b.Holding(), maxRunning.Load())
		}
		stopB()
		<-bDone
	})
}
