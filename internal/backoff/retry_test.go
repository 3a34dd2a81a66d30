package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

var errFlaky = errors.New("flaky")

func TestRetryUntilSuccess(t *testing.T) {
	var pauses []time.Duration
	r := Retry{Pause: &Backoff{Min: time.Millisecond, Max: 4 * time.Millisecond, Jitter: -1},
		OnRetry: func(attempt int, err error, pause time.Duration) {
			if attempt != len(pauses)+1 || !errors.Is(err, errFlaky) {
				t.Errorf("OnRetry(%d, %v)", attempt, err)
			}
			pauses = append(pauses, pause)
		}}
	calls := 0
	err := r.Do(context.Background(), func(attempt int) error {
		calls++
		if attempt != calls {
			t.Errorf("attempt %d on call %d", attempt, calls)
		}
		if calls < 5 {
			return errFlaky
		}
		return nil
	})
	if err != nil || calls != 5 {
		t.Fatalf("Do = %v after %d calls", err, calls)
	}
	want := []time.Duration{1, 2, 4, 4}
	for i, w := range want {
		if pauses[i] != w*time.Millisecond {
			t.Fatalf("pauses %v, want %v ms", pauses, want)
		}
	}
}

func TestRetryStopsOnStopAndTries(t *testing.T) {
	calls := 0
	err := Retry{Pause: &Backoff{Min: time.Millisecond}}.Do(context.Background(), func(int) error {
		calls++
		return Stop(errFlaky)
	})
	if err != errFlaky || calls != 1 {
		t.Fatalf("Stop: %v after %d calls, want errFlaky unwrapped after 1", err, calls)
	}
	calls = 0
	err = Retry{Pause: &Backoff{Min: time.Millisecond}, Tries: 3}.Do(context.Background(), func(int) error {
		calls++
		return After(time.Millisecond, errFlaky)
	})
	if err != errFlaky || calls != 3 {
		t.Fatalf("Tries 3: %v after %d calls, want errFlaky unwrapped after 3", err, calls)
	}
}

func TestRetryAfterOverridesThePause(t *testing.T) {
	b := &Backoff{Min: time.Hour, Jitter: -1}
	var got []time.Duration
	err := Retry{Pause: b, Tries: 3, OnRetry: func(_ int, _ error, p time.Duration) { got = append(got, p) }}.Do(context.Background(), func(attempt int) error {
		return After(time.Duration(attempt)*time.Millisecond, errFlaky)
	})
	if !errors.Is(err, errFlaky) || len(got) != 2 || got[0] != time.Millisecond || got[1] != 2*time.Millisecond {
		t.Fatalf("Do = %v, pauses %v", err, got)
	}
	if b.Attempts() != 0 {
		t.Fatalf("the backoff advanced %d times under Retry-After pauses", b.Attempts())
	}
}

func TestRetryCtxEndsDuringPause(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := Retry{Pause: &Backoff{Min: time.Hour}, OnRetry: func(int, error, time.Duration) { cancel() }}.Do(ctx, func(int) error {
		return errFlaky
	})
	if !errors.Is(err, ErrInterrupted) || !errors.Is(err, context.Canceled) || !errors.Is(err, errFlaky) {
		t.Fatalf("Do = %v, want both the ctx's error and the last attempt's", err)
	}
}

func TestRetryAfterZeroIsAtOnce(t *testing.T) {
	var got []time.Duration
	calls := 0
	err := Retry{Pause: &Backoff{Min: time.Hour}, OnRetry: func(_ int, _ error, p time.Duration) { got = append(got, p) }}.Do(context.Background(), func(int) error {
		calls++
		if calls == 3 {
			return nil
		}
		return After(0, errFlaky)
	})
	if err != nil || len(got) != 2 || got[0] != 0 || got[1] != 0 {
		t.Fatalf("Do = %v, pauses %v, want two of 0", err, got)
	}
}
