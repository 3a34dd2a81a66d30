package backoff

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slackask/slackask/internal/clock"
)

// Retry is how one operation is retried: the pauses, a bound on the
// attempts and what to say before each pause. It is the one retry loop of
// the module; every caller that tries again goes through Do.
type Retry struct {
	// Pause paces the attempts; nil means a fresh zero Backoff. Its pauses
	// go on from where an earlier Do left them: Reset it after a success
	// that should start them over.
	Pause *Backoff
	// Tries bounds the attempts; 0 means no bound (until success, a Stop
	// error or ctx's end).
	Tries int
	// OnRetry, when set, is called before each pause with the attempt
	// that failed (from 1), its error and the pause.
	OnRetry func(attempt int, err error, pause time.Duration)
}

// Do calls op, with the attempt number from 1, until it returns nil, an
// error marked with Stop, or Tries attempts have failed, sleeping between
// attempts the Pause's next pause or the one a failed attempt asked for
// with After. It returns nil or the last attempt's error (Stop and After
// unwrapped); when ctx ends during a pause, an error that wraps
// ErrInterrupted, ctx.Err() and the last attempt's error.
func (r Retry) Do(ctx context.Context, op func(attempt int) error) error {
	b := r.Pause
	if b == nil {
		b = &Backoff{}
	}
	for attempt := 1; ; attempt++ {
		err := op(attempt)
		if err == nil {
			return nil
		}
		var stop *stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		var after *afterError
		asked := errors.As(err, &after)
		if asked {
			err = after.err
		}
		if r.Tries > 0 && attempt >= r.Tries {
			return err
		}
		pause := b.Next
		if asked {
			pause = func() time.Duration { return max(after.d, 0) }
		}
		d := pause()
		if r.OnRetry != nil {
			r.OnRetry(attempt, err, d)
		}
		if !clock.Sleep(ctx, d) {
			return fmt.Errorf("%w: %w; last attempt: %w", ErrInterrupted, ctx.Err(), err)
		}
	}
}

// ErrInterrupted is wrapped by Do's error when ctx ended during a pause.
var ErrInterrupted = errors.New("retry interrupted")

// Stop marks err as one that no retry can help: Do returns err at once.
func Stop(err error) error {
	if err == nil {
		return nil
	}
	return &stopError{err}
}

// After marks err as retryable after d (a server's Retry-After; 0: at
// once) instead of the backoff's next pause.
func After(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &afterError{d, err}
}

type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }
func (e *stopError) Unwrap() error { return e.err }

type afterError struct {
	d   time.Duration
	err error
}

func (e *afterError) Error() string { return e.err.Error() }
func (e *afterError) Unwrap() error { return e.err }
