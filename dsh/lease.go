package dsh

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/internal/clock"
)

// Leaser hands out named leases shared by every process on one database
// (store.Store.Lease).
type Leaser interface {
	Lease(ctx context.Context, name, holder string, ttl time.Duration) (held bool, err error)
}

// Runner is what Leased runs: a Bridge.
type Runner interface {
	Run(ctx context.Context) error
	Ready(ctx context.Context) error
}

// Leased runs a bridge on one replica at a time: only the holder of the
// named lease runs one. The holder renews the lease every TTL/3 while its
// bridge runs; when it dies, its lease runs out after at most TTL and
// another replica's Leased takes it and starts a bridge of its own (a
// Bridge rebuilds its sessions from the ask history). Set the fields,
// then call Run once.
type Leased struct {
	Store  Leaser
	Name   string        // the lease, e.g. "dsh-bridge"
	Holder string        // this process, unique among the replicas
	TTL    time.Duration // how long a lease outlives its last renewal
	// New makes the bridge for one tenure (a Bridge runs once).
	New    func() (Runner, error)
	Logger zerolog.Logger

	mu  sync.Mutex
	cur Runner // the running bridge while this process holds the lease
}

// Run takes the lease when it is free, runs a bridge while holding it, and
// stops the bridge when a renewal is refused or none succeeded for TTL.
// It returns when ctx ends (releasing a lease it holds), or with New's
// error.
func (l *Leased) Run(ctx context.Context) error {
	if l.TTL <= 0 || l.Store == nil || l.New == nil || l.Name == "" || l.Holder == "" {
		return errors.New("dsh lease: Store, Name, Holder, TTL and New are required")
	}
	every := l.TTL / 3
	for {
		held, err := l.Store.Lease(ctx, l.Name, l.Holder, l.TTL)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			l.Logger.Warn().Err(err).Str("lease", l.Name).Msg("dsh: could not ask for the bridge's lease")
		}
		if held {
			if err := l.hold(ctx, every); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		if !clock.Sleep(ctx, every) {
			return nil
		}
	}
}

// hold runs a bridge while renewing the lease every `every`; it returns
// once the bridge stopped (ctx ended, or the lease was lost).
func (l *Leased) hold(ctx context.Context, every time.Duration) error {
	b, err := l.New()
	if err != nil {
		_, _ = l.Store.Lease(context.WithoutCancel(ctx), l.Name, l.Holder, 0)
		return fmt.Errorf("dsh lease: %w", err)
	}
	l.Logger.Info().Str("lease", l.Name).Str("holder", l.Holder).Msg("dsh: this replica runs the bridge")
	bctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Run(bctx)
	}()
	l.set(b)
	defer func() {
		stop()
		<-done
		l.set(nil)
		// Let another replica take over at once rather than after TTL
		// (refused when the lease is no longer ours).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = l.Store.Lease(rctx, l.Name, l.Holder, 0)
	}()
	renewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-done:
			return nil
		case <-time.After(every):
		}
		held, err := l.Store.Lease(ctx, l.Name, l.Holder, l.TTL)
		switch {
		case err == nil && held:
			renewed = time.Now()
		case err == nil:
			l.Logger.Warn().Str("lease", l.Name).Msg("dsh: another replica took the bridge's lease; stopping the bridge here")
			return nil
		case time.Since(renewed) >= l.TTL-every:
			// The lease runs out before the next renewal could land:
			// another replica may hold it by then.
			l.Logger.Warn().Err(err).Str("lease", l.Name).Msg("dsh: could not renew the bridge's lease; stopping the bridge here")
			return nil
		default:
			l.Logger.Warn().Err(err).Str("lease", l.Name).Msg("dsh: could not renew the bridge's lease; retrying")
		}
	}
}

func (l *Leased) set(b Runner) {
	l.mu.Lock()
	l.cur = b
	l.mu.Unlock()
}

// Holding reports whether this process runs the bridge now.
func (l *Leased) Holding() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur != nil
}

// Ready is the running bridge's readiness on the holder; a replica that
// stands by (another runs the bridge) is ready.
func (l *Leased) Ready(ctx context.Context) error {
	l.mu.Lock()
	b := l.cur
	l.mu.Unlock()
	if b == nil {
		return nil
	}
	return b.Ready(ctx)
}
