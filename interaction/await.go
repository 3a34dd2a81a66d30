package interaction

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/slackask/slackask/internal/backoff"
	"github.com/slackask/slackask/internal/clock"
)

// Defaults of AwaitOptions.
const (
	// DefaultCreateTimeout bounds one Create, which runs detached from the
	// caller's context.
	DefaultCreateTimeout = time.Minute
	// DefaultWithdrawTimeout bounds the withdrawal of an abandoned ask.
	DefaultWithdrawTimeout = 30 * time.Second
	// DefaultRetryPause is the pause between retries of a Retry without a
	// Pacer.
	DefaultRetryPause = time.Second
	// minRewait keeps a Wait that returns a pending ask early (a long poll
	// that elapsed) from becoming a busy loop.
	minRewait = 250 * time.Millisecond
)

// Pacer yields the pauses between the attempts of one retry loop;
// *backoff.Backoff (internal/backoff) is the one the front doors use.
type Pacer interface {
	Next() time.Duration // the pause before the next attempt
	Reset()              // after a success
}

// Retry says how long an operation that keeps failing is retried. The zero
// value retries nothing.
type Retry struct {
	// Forever retries until the caller's context ends.
	Forever bool
	// For bounds how long a run of failures may last, from the start of
	// its first attempt (0: no bound of time). A Create's attempts and the
	// pauses between them are cut to fit it.
	For time.Duration
	// Attempts bounds the attempts of a run of failures (0: no bound of
	// count). With both For and Attempts zero nothing is retried.
	Attempts int
	// Backoff paces the attempts; nil pauses DefaultRetryPause each time.
	// It is used by one AskAndWait call at a time.
	Backoff Pacer
}

func (r Retry) pause() time.Duration {
	if r.Backoff == nil {
		return DefaultRetryPause
	}
	return r.Backoff.Next()
}

func (r Retry) reset() {
	if r.Backoff != nil {
		r.Backoff.Reset()
	}
}

// left reports how much of For remains of a run of failures that started
// at since; ok is false when no bound of time applies.
func (r Retry) left(since time.Time) (d time.Duration, ok bool) {
	if r.Forever || r.For <= 0 {
		return 0, false
	}
	return r.For - time.Since(since), true
}

// again reports whether an operation that has failed attempts times in a
// run that started at since may be tried again.
func (r Retry) again(attempts int, since time.Time) bool {
	switch {
	case r.Forever:
		return true
	case r.For <= 0 && r.Attempts <= 0:
		return false
	case r.Attempts > 0 && attempts >= r.Attempts:
		return false
	case r.For > 0 && time.Since(since) >= r.For:
		return false
	}
	return true
}

// AwaitOptions say how AskAndWait handles what differs between front
// doors. The zero value creates once, retries no failing Wait and withdraws
// the ask without a note when ctx ends.
type AwaitOptions struct {
	// CreateRetry and WaitRetry say how long failing Creates and Waits are
	// retried (only errors Retryable accepts).
	CreateRetry, WaitRetry Retry
	// Retryable reports whether an error may go away by itself. Nil means
	// every error except those of the request itself or of an ask that is
	// gone (see Permanent).
	Retryable func(error) bool
	// MaybeCreated reports whether a failed Create may nevertheless have
	// created the ask (the request reached the service, its answer was
	// lost). Nil means never, as for an in-process service. When the caller
	// leaves after such a failure, AskAndWait creates once more with the
	// same idempotency key to learn the ask and withdraw it.
	MaybeCreated func(error) bool
	// Abandoned is asked, once ctx has ended with the ask pending, whether
	// to withdraw it and with what note (shown by services that implement
	// NoteWithdrawer). Nil means withdraw with Note.
	Abandoned func() (withdraw bool, note string)
	// Note is the withdrawal note when Abandoned is nil.
	Note string
	// WaitFor, when positive, ends the wait after that long with the ask
	// still pending and not withdrawn: the caller fetches the answer later.
	WaitFor time.Duration
	// OnCreated is called once with the ask as Create returned it.
	OnCreated func(Ask)
	// OnRetry is called before each retry with the operation ("create",
	// "wait"), the error and the pause before the next attempt.
	OnRetry func(op string, err error, pause time.Duration)
	// CreateTimeout and WithdrawTimeout bound each Create and the
	// withdrawal (0: the defaults above).
	CreateTimeout, WithdrawTimeout time.Duration
}

// Permanent reports whether err is the fault of the request or says the ask
// is gone or ended, so that retrying cannot help.
func Permanent(err error) bool {
	switch ErrorCode(err) {
	case EmptyQuestions, InvalidQuestion, BadIntent, Unauthorized, NoProvider, NotFound,
		AskAborted, AskCancelled, AskTimeout:
		return true
	}
	return errors.Is(err, context.Canceled)
}

// AskAndWait creates the ask of in through svc and waits until it ends,
// which every front door (MCP, dsh, the Go client, `slackask ask`) does:
//
//   - Create runs detached from ctx, so that a message Slack accepted is
//     always tied to its record and known by id; a caller that left
//     meanwhile then withdraws it. When Create is retried and in has no
//     IdempotencyKey, a random one is set so a retry never posts twice.
//   - Failing Creates and Waits are retried as the options say; a Wait
//     that keeps failing past its retry withdraws the ask (nobody would get
//     its answer) and returns the failure.
//   - When ctx ends with the ask pending it is withdrawn (or kept, as
//     Abandoned says) and returned as that left it.
//
// An ask that ended, was withdrawn, was kept, or is pending after WaitFor
// is returned with a nil error: read ask.Status or ask.Result(). The error
// is non-nil when the ask could not be created (the ask is then empty),
// when it vanished (NOT_FOUND), when waiting kept failing, or when ctx
// ended and the withdrawal failed (ASK_ABORTED naming the ask).
func AskAndWait(ctx context.Context, svc AskService, in AskInput, o AwaitOptions) (Ask, error) {
	if err := ctx.Err(); err != nil {
		return Ask{}, Errorf(AskAborted, "ask and wait: the caller left before asking (%v)", err)
	}
	retryable := o.Retryable
	if retryable == nil {
		retryable = func(err error) bool { return !Permanent(err) }
	}
	if in.IdempotencyKey == "" && (o.CreateRetry.Forever || o.CreateRetry.For > 0 || o.CreateRetry.Attempts > 1) {
		in.IdempotencyKey = rand.Text()
	}

	ask, err := createAsk(ctx, svc, in, o, retryable)
	if err != nil {
		return Ask{}, err
	}
	if o.OnCreated != nil {
		o.OnCreated(ask)
	}
	return waitAsk(ctx, svc, ask, o, retryable)
}

func createAsk(ctx context.Context, svc AskService, in AskInput, o AwaitOptions, retryable func(error) bool) (Ask, error) {
	var (
		ask          Ask
		since        time.Time
		maybeCreated bool
		lastErr      error
	)
	err := backoff.Retry{}.Do(ctx, func(attempt int) error {
		// The run of failures starts with the first attempt, and a bound of
		// time (CreateRetry.For) bounds each attempt and pause too: a server
		// that takes the request and never answers, or a pause longer than
		// the time left, would otherwise outlast it (by up to CreateTimeout,
		// or the backoff's longest pause).
		if since.IsZero() {
			since = time.Now()
		}
		timeout := or(o.CreateTimeout, DefaultCreateTimeout)
		if left, ok := o.CreateRetry.left(since); ok {
			timeout = min(timeout, left)
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		var err error
		ask, err = svc.Create(cctx, in)
		cancel()
		if err == nil {
			return nil
		}
		lastErr = err
		if o.MaybeCreated != nil && o.MaybeCreated(err) {
			maybeCreated = true
		}
		if !retryable(err) || ctx.Err() != nil || !o.CreateRetry.again(attempt, since) {
			return backoff.Stop(err)
		}
		pause := o.CreateRetry.pause()
		if left, ok := o.CreateRetry.left(since); ok && pause >= left {
			// No attempt could start before the bound: wait it out (or
			// until the caller leaves), then give up, without announcing a
			// retry that will not come.
			clock.Sleep(ctx, left)
			return backoff.Stop(err)
		}
		if o.OnRetry != nil {
			o.OnRetry("create", err, pause)
		}
		return backoff.After(pause, err)
	})
	if err == nil {
		return ask, nil
	}
	if ctx.Err() == nil {
		return Ask{}, lastErr
	}
	// The caller left while creating. An attempt that may have landed is
	// repeated with the same key to learn the ask, which is then withdrawn.
	if !maybeCreated || in.IdempotencyKey == "" {
		return Ask{}, Errorf(AskAborted, "ask and wait: the caller left before the ask was created (%v)", lastErr)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), or(o.WithdrawTimeout, DefaultWithdrawTimeout))
	ask, err = svc.Create(cctx, in)
	cancel()
	if err != nil {
		return Ask{}, fmt.Errorf("ask and wait: the caller left; the ask may exist but could not be withdrawn: %w",
			Errorf(AskAborted, "%v", err))
	}
	return abandon(ctx, svc, ask, o)
}

// errStopWaiting: the caller left, or WaitFor elapsed.
var errStopWaiting = errors.New("stop waiting")

func waitAsk(ctx context.Context, svc AskService, ask Ask, o AwaitOptions, retryable func(error) bool) (Ask, error) {
	wctx := ctx
	if o.WaitFor > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, o.WaitFor)
		defer cancel()
	}
	var (
		since    time.Time
		failures int // of the current run
	)
	err := backoff.Retry{}.Do(wctx, func(int) error {
		if ask.Status.Ended() {
			return nil
		}
		if wctx.Err() != nil { // ctx's end ends wctx too
			return backoff.Stop(errStopWaiting)
		}
		start := time.Now()
		cur, err := svc.Wait(wctx, ask.ID)
		switch {
		case err == nil:
			ask, since, failures = cur, time.Time{}, 0
			o.WaitRetry.reset()
			if ask.Status.Ended() {
				return nil
			}
			// A Wait that returned a pending ask early (a long poll that
			// elapsed) is repeated, without spinning.
			return backoff.After(minRewait-time.Since(start), errStillPending)
		case wctx.Err() != nil:
			return backoff.Stop(errStopWaiting)
		case !retryable(err):
			return backoff.Stop(err)
		}
		failures++
		if since.IsZero() {
			since = start
		}
		if !o.WaitRetry.again(failures, since) {
			if ended, werr := withdraw(ctx, svc, ask.ID, o.Note, o); werr == nil {
				ask = ended
			}
			return backoff.Stop(err)
		}
		pause := o.WaitRetry.pause()
		if o.OnRetry != nil {
			o.OnRetry("wait", err, pause)
		}
		return backoff.After(pause, err)
	})
	switch {
	case err == nil:
		return ask, nil
	case errors.Is(err, errStopWaiting), errors.Is(err, backoff.ErrInterrupted):
		if ctx.Err() != nil {
			return abandon(ctx, svc, ask, o)
		}
		return ask, nil // WaitFor elapsed: still pending, not withdrawn
	}
	return ask, err
}

// errStillPending: a Wait returned the ask pending.
var errStillPending = errors.New("still pending")

// abandon withdraws (or keeps, as o.Abandoned says) the pending ask of a
// caller that left.
func abandon(ctx context.Context, svc AskService, ask Ask, o AwaitOptions) (Ask, error) {
	if ask.Status.Ended() {
		return ask, nil
	}
	withdrawIt, note := true, o.Note
	if o.Abandoned != nil {
		withdrawIt, note = o.Abandoned()
	}
	if !withdrawIt {
		return ask, nil
	}
	ended, err := withdraw(ctx, svc, ask.ID, note, o)
	if err != nil {
		return ask, fmt.Errorf("ask and wait: the caller left (%v); withdrawing ask %s failed: %w",
			context.Cause(ctx), ask.ID, Errorf(AskAborted, "%s", ErrorMessage(err)))
	}
	return ended, nil
}

// withdraw ends the ask as aborted with note when the service can show one.
// It runs detached from ctx, which has usually ended.
func withdraw(ctx context.Context, svc AskService, id, note string, o AwaitOptions) (Ask, error) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), or(o.WithdrawTimeout, DefaultWithdrawTimeout))
	defer cancel()
	return WithdrawNoted(wctx, svc, id, note)
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
