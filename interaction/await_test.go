package interaction_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/asktest"
	"github.com/slackask/slackask/internal/backoff"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeAsks is the shared fake AskService whose Create and Wait can be
// made to fail or to block.
type fakeAsks struct {
	*asktest.Fake
	mu          sync.Mutex
	createErrs  []error       // returned (and consumed) by the next Creates
	waitErrs    []error       // returned (and consumed) by the next Waits
	createGate  chan struct{} // when set, Create blocks until it is closed
	createdOnce chan struct{} // closed when a Create has started
	started     sync.Once
	waiting     chan string // receives the id of each Wait that blocks
}

func newFakeAsks() *fakeAsks {
	f := &fakeAsks{Fake: asktest.New(asktest.Config{IDFormat: "a%d"}), createdOnce: make(chan struct{})}
	f.waiting = f.Waiting
	f.SetHook(func(ctx context.Context, c asktest.Call) error {
		switch c.Op {
		case asktest.OpCreate:
			f.started.Do(func() { close(f.createdOnce) })
			if f.createGate != nil {
				select {
				case <-f.createGate:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return f.pop(&f.createErrs)
		case asktest.OpWait:
			return f.pop(&f.waitErrs)
		}
		return nil
	})
	return f
}

func (f *fakeAsks) pop(errs *[]error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(*errs) == 0 {
		return nil
	}
	err := (*errs)[0]
	*errs = (*errs)[1:]
	return err
}

func (f *fakeAsks) end(id string, st interaction.Status, ans *interaction.Answer) {
	f.End(id, st, ans, nil)
}

func (f *fakeAsks) counts() (creates, withdrawals int, notes []string) {
	return f.Calls(asktest.OpCreate), f.Calls(asktest.OpWithdraw), f.Notes()
}

// fast paces test retries: 1 ms each.
func fast() interaction.Pacer {
	return &backoff.Backoff{Min: time.Millisecond, Max: 2 * time.Millisecond, Jitter: -1}
}

func oneQuestion() interaction.AskInput {
	return interaction.AskInput{Request: interaction.Request{Questions: []interaction.Question{q("a", "Yes", "No")}}}
}

func TestAskAndWaitAnswered(t *testing.T) {
	f := newFakeAsks()
	var created string
	go func() {
		id := <-f.waiting
		f.end(id, interaction.StatusAnswered, &interaction.Answer{Answers: []interaction.AnswerItem{{ID: "a", Selected: []string{"Yes"}}}})
	}()
	ask, err := interaction.AskAndWait(context.Background(), f, oneQuestion(),
		interaction.AwaitOptions{OnCreated: func(a interaction.Ask) { created = a.ID }})
	if err != nil || ask.Status != interaction.StatusAnswered || created != ask.ID {
		t.Fatalf("AskAndWait = %+v, %v (created %q)", ask, err, created)
	}
}

// TestAskAndWaitCallerLeavesDuringCreate: Create runs to its end although
// the caller left, and the ask it made is withdrawn with the note.
func TestAskAndWaitCallerLeavesDuringCreate(t *testing.T) {
	f := newFakeAsks()
	f.createGate = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-f.createdOnce
		cancel()
		close(f.createGate)
	}()
	ask, err := interaction.AskAndWait(ctx, f, oneQuestion(), interaction.AwaitOptions{Note: "the agent stopped"})
	if err != nil || ask.ID == "" || ask.Status != interaction.StatusAborted {
		t.Fatalf("AskAndWait = %+v, %v; want the created ask, withdrawn", ask, err)
	}
	if _, w, notes := f.counts(); w != 1 || notes[0] != "the agent stopped" {
		t.Fatalf("%d withdrawals, notes %q", w, notes)
	}
}

func TestAskAndWaitCallerLeavesWhileWaiting(t *testing.T) {
	for _, keep := range []bool{false, true} {
		f := newFakeAsks()
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-f.waiting; cancel() }()
		ask, err := interaction.AskAndWait(ctx, f, oneQuestion(), interaction.AwaitOptions{
			Abandoned: func() (bool, string) { return !keep, "gone" },
		})
		_, w, _ := f.counts()
		switch {
		case err != nil:
			t.Fatalf("keep=%v: %v", keep, err)
		case keep && (ask.Status != interaction.StatusPending || w != 0):
			t.Fatalf("kept: %+v, %d withdrawals", ask, w)
		case !keep && (ask.Status != interaction.StatusAborted || w != 1):
			t.Fatalf("withdrawn: %+v, %d withdrawals", ask, w)
		}
	}
}

func TestAskAndWaitWaitFor(t *testing.T) {
	f := newFakeAsks()
	ask, err := interaction.AskAndWait(context.Background(), f, oneQuestion(), interaction.AwaitOptions{WaitFor: 20 * time.Millisecond})
	if _, w, _ := f.counts(); err != nil || ask.Status != interaction.StatusPending || w != 0 {
		t.Fatalf("AskAndWait = %+v, %v, %d withdrawals; want pending and kept", ask, err, w)
	}
}

func TestAskAndWaitRetries(t *testing.T) {
	t.Run("create", func(t *testing.T) {
		f := newFakeAsks()
		f.createErrs = []error{errors.New("connection refused"), errors.New("connection refused")}
		var retries []string
		go func() { f.end(<-f.waiting, interaction.StatusExpired, nil) }()
		ask, err := interaction.AskAndWait(context.Background(), f, oneQuestion(), interaction.AwaitOptions{
			CreateRetry: interaction.Retry{Attempts: 3, Backoff: fast()},
			OnRetry:     func(op string, _ error, _ time.Duration) { retries = append(retries, op) },
		})
		if c, _, _ := f.counts(); err != nil || ask.Status != interaction.StatusExpired || c != 3 || len(retries) != 2 {
			t.Fatalf("AskAndWait = %+v, %v; %d creates, retries %q", ask, err, c, retries)
		}
	})
	t.Run("create gives up", func(t *testing.T) {
		f := newFakeAsks()
		f.createErrs = []error{errors.New("refused"), errors.New("refused"), errors.New("refused")}
		_, err := interaction.AskAndWait(context.Background(), f, oneQuestion(), interaction.AwaitOptions{
			CreateRetry: interaction.Retry{Attempts: 2, Backoff: fast()},
		})
		if c, _, _ := f.counts(); err == nil || c != 2 {
			t.Fatalf("err %v after %d creates; want an error after 2", err, c)
		}
	})
	t.Run("permanent create error", func(t *testing.T) {
		f := newFakeAsks()
		f.createErrs = []error{interaction.Errorf(interaction.InvalidQuestion, "no")}
		_, err := interaction.AskAndWait(context.Background(), f, oneQuestion(), interaction.AwaitOptions{
			CreateRetry: interaction.Retry{Forever: true, Backoff: fast()},
		})
		if c, _, _ := f.counts(); interaction.ErrorCode(err) != interaction.InvalidQuestion || c != 1 {
			t.Fatalf("err %v after %d creates", err, c)
		}
	})
	t.Run("wait then withdraw", func(t *testing.T) {
		f := newFakeAsks()
		f.waitErrs = []error{errors.New("down"), errors.New("down"), errors.New("down")}
		ask, err := interaction.AskAndWait(context.Background(), f, oneQuestion(), interaction.AwaitOptions{
			WaitRetry: interaction.Retry{Attempts: 2, Backoff: fast()}, Note: "nobody listens",
		})
		if _, w, notes := f.counts(); err == nil || ask.Status != interaction.StatusAborted || w != 1 || notes[0] != "nobody listens" {
			t.Fatalf("AskAndWait = %+v, %v; %d withdrawals %q", ask, err, w, notes)
		}
	})
	t.Run("wait recovers", func(t *testing.T) {
		f := newFakeAsks()
		f.waitErrs = []error{errors.New("down")}
		go func() { f.end(<-f.waiting, interaction.StatusCancelled, nil) }()
		ask, err := interaction.AskAndWait(context.Background(), f, oneQuestion(), interaction.AwaitOptions{
			WaitRetry: interaction.Retry{For: time.Minute, Backoff: fast()},
		})
		if err != nil || ask.Status != interaction.StatusCancelled {
			t.Fatalf("AskAndWait = %+v, %v", ask, err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		f := newFakeAsks()
		f.waitErrs = []error{interaction.Errorf(interaction.NotFound, "gone")}
		_, err := interaction.AskAndWait(context.Background(), f, oneQuestion(), interaction.AwaitOptions{
			WaitRetry: interaction.Retry{Forever: true, Backoff: fast()},
		})
		if _, w, _ := f.counts(); interaction.ErrorCode(err) != interaction.NotFound || w != 0 {
			t.Fatalf("err %v, %d withdrawals", err, w)
		}
	})
}

// slowPacer pauses far longer than the bound of the test that uses it.
type slowPacer struct{}

func (slowPacer) Next() time.Duration { return 30 * time.Second }
func (slowPacer) Reset()              {}

// TestAskAndWaitCreateRetryForIsABound: CreateRetry.For bounds the whole
// run of creates, counted from the first attempt: an attempt that hangs is
// cut at the bound (not at CreateTimeout), and a pause that would end past
// it is not announced or slept in full.
func TestAskAndWaitCreateRetryForIsABound(t *testing.T) {
	const bound = 200 * time.Millisecond
	// Generous: without the bound the cases take CreateTimeout (20 s) or
	// the pacer's 30 s pause at least.
	const slack = 5 * time.Second
	t.Run("hanging create", func(t *testing.T) {
		f := newFakeAsks()
		f.createGate = make(chan struct{}) // never opened: each Create waits for its context
		start := time.Now()
		_, err := interaction.AskAndWait(context.Background(), f, oneQuestion(), interaction.AwaitOptions{
			CreateRetry: interaction.Retry{For: bound, Backoff: fast()}, CreateTimeout: 20 * time.Second,
		})
		if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took < bound || took > bound+slack {
			t.Fatalf("AskAndWait: %v after %s, want the attempt's deadline after about %s", err, took, bound)
		}
	})
	t.Run("pause past the bound", func(t *testing.T) {
		f := newFakeAsks()
		f.createErrs = []error{errors.New("connection refused"), errors.New("connection refused")}
		var retries int
		start := time.Now()
		_, err := interaction.AskAndWait(context.Background(), f, oneQuestion(), interaction.AwaitOptions{
			CreateRetry: interaction.Retry{For: bound, Backoff: slowPacer{}},
			OnRetry:     func(string, error, time.Duration) { retries++ },
		})
		took := time.Since(start)
		if c, _, _ := f.counts(); err == nil || c != 1 || retries != 0 {
			t.Fatalf("AskAndWait: %v, %d creates, %d retries announced; want an error after 1 create, none announced", err, c, retries)
		}
		if took < bound || took > bound+slack {
			t.Fatalf("gave up after %s, want about %s", took, bound)
		}
	})
}

// TestAskAndWaitMaybeCreated: a create whose answer was lost when the caller
// left is repeated with the same key, and the ask it finds withdrawn.
func TestAskAndWaitMaybeCreated(t *testing.T) {
	f := newFakeAsks()
	lost := errors.New("answer lost")
	ctx, cancel := context.WithCancel(context.Background())
	svc := &loseFirst{fakeAsks: f, err: lost, cancel: cancel}
	ask, err := interaction.AskAndWait(ctx, svc, oneQuestion(), interaction.AwaitOptions{
		CreateRetry:  interaction.Retry{Forever: true, Backoff: fast()},
		MaybeCreated: func(err error) bool { return errors.Is(err, lost) },
	})
	if c, w, _ := f.counts(); err != nil || ask.Status != interaction.StatusAborted || c != 2 || w != 1 {
		t.Fatalf("AskAndWait = %+v, %v; %d creates, %d withdrawals", ask, err, c, w)
	}
	// Without MaybeCreated, a caller that left after a failed create has
	// nothing to withdraw.
	ctx2, cancel2 := context.WithCancel(context.Background())
	_, err = interaction.AskAndWait(ctx2, &loseFirst{fakeAsks: newFakeAsks(), err: lost, cancel: cancel2}, oneQuestion(),
		interaction.AwaitOptions{CreateRetry: interaction.Retry{Forever: true, Backoff: fast()}})
	if interaction.ErrorCode(err) != interaction.AskAborted {
		t.Fatalf("err %v, want ASK_ABORTED", err)
	}
}

// loseFirst creates the first ask but reports an error, and cancels the
// caller at that moment.
type loseFirst struct {
	*fakeAsks
	err    error
	cancel context.CancelFunc
	once   sync.Once
}

func (l *loseFirst) Create(ctx context.Context, in interaction.AskInput) (interaction.Ask, error) {
	a, err := l.fakeAsks.Create(ctx, in)
	lost := false
	l.once.Do(func() { lost = true; l.cancel() })
	if lost {
		return interaction.Ask{}, l.err
	}
	return a, err
}

func TestAskAndWaitCallerGoneBefore(t *testing.T) {
	f := newFakeAsks()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := interaction.AskAndWait(ctx, f, oneQuestion(), interaction.AwaitOptions{})
	if c, _, _ := f.counts(); interaction.ErrorCode(err) != interaction.AskAborted || c != 0 {
		t.Fatalf("err %v, %d creates", err, c)
	}
}
