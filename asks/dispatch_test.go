package asks

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
)

// replicas is several Services on one store, showing asks on one surface
// (each through its own Surface value, so that a test can hold one
// replica's calls).
type replicas struct {
	t    *testing.T
	st   store.Store
	surf *surface
	svcs []*Service
	stop []func()
}

func newReplicas(t *testing.T, surfaces ...Surface) *replicas {
	t.Helper()
	r := &replicas{t: t, st: memory.New(), surf: newSurface()}
	for _, sf := range surfaces {
		if sf == nil {
			sf = r.surf
		}
		svc, err := New(Config{Store: r.st, Surface: sf, DefaultChannel: chanID, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		r.svcs = append(r.svcs, svc)
	}
	return r
}

// run starts replica i's background work; the returned func stops it (as
// a dead replica: whatever it claimed stays claimed).
func (r *replicas) run(i int) (stop func()) {
	if err := r.svcs[i].Start(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	stop = func() { _ = r.svcs[i].Close() }
	r.t.Cleanup(stop)
	<-r.svcs[i].recovered
	return stop
}

// create makes a two-question ask on replica i.
func (r *replicas) create(i int) interaction.Ask {
	r.t.Helper()
	ask, err := r.svcs[i].Create(context.Background(), interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		r.t.Fatal(err)
	}
	return ask
}

// other is alice typing text for question q of ask on replica i.
func (r *replicas) other(i int, ask interaction.Ask, q int, text string) {
	r.t.Helper()
	if _, err := r.svcs[i].Other(context.Background(), click(ask, alice), q, text); err != nil {
		r.t.Fatal(err)
	}
}

func (r *replicas) get(id string) Record {
	r.t.Helper()
	rec, err := r.st.Get(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	return rec
}

// A deadline and a reminder fire once across two replicas watching one
// store, whichever replica created the ask.
func TestDueFiresOnceAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t, nil, nil)
		r.run(0)
		r.run(1)
		var asks []interaction.Ask
		for i := range 10 {
			ask, err := r.svcs[i%2].Create(context.Background(), interaction.AskInput{Request: twoQuestions(),
				Timeout: interaction.Duration(10 * time.Minute), RemindAfter: interaction.Duration(5 * time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			asks = append(asks, ask)
		}
		time.Sleep(5*time.Minute + time.Second)
		synctest.Wait()
		for _, a := range asks {
			if n := r.surf.count(&r.surf.reminders, a.ID); n != 1 {
				t.Fatalf("%s: %d reminders, want 1", a.ID, n)
			}
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		var expired int64
		for _, s := range r.svcs {
			expired += s.Counters().Expired
		}
		if expired != 10 {
			t.Fatalf("%d expiries across the replicas, want 10", expired)
		}
		for _, a := range asks {
			rec := r.get(a.ID)
			if rec.Status != interaction.StatusExpired || !rec.Synced || !rec.WakeAt.IsZero() {
				t.Fatalf("%s: %s synced %v wake %v", a.ID, rec.Status, rec.Synced, rec.WakeAt)
			}
			if n := r.surf.count(&r.surf.reminders, a.ID); n != 1 {
				t.Fatalf("%s: %d reminders after the deadline", a.ID, n)
			}
		}
	})
}

// A replica that claimed due records and died leaves them to another once
// its claims' lease has run out.
func TestDeadReplicasClaimsAreTakenOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t, nil, nil)
		ctx := context.Background()
		ask, err := r.svcs[0].Create(ctx, interaction.AskInput{Request: twoQuestions(), Timeout: interaction.Duration(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		// Replica 0 claims the deadline and dies before acting on it.
		claimed, err := r.st.ClaimDue(ctx, time.Now(), dueLease, dueBatch)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %d %v", len(claimed), err)
		}
		r.run(1)
		time.Sleep(dueLease - time.Second)
		synctest.Wait()
		if st := r.get(ask.ID).Status; st != interaction.StatusPending {
			t.Fatalf("expired while claimed: %s", st)
		}
		time.Sleep(time.Second + duePoll)
		synctest.Wait()
		if rec := r.get(ask.ID); rec.Status != interaction.StatusExpired || !rec.Synced {
			t.Fatalf("not taken over: %s synced %v", rec.Status, rec.Synced)
		}
	})
}

// An ask left stored but unposted by a replica that died between the two
// is posted by another once postGrace has passed, once.
func TestUnpostedAskIsPostedElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t, nil)
		ctx := context.Background()
		rec, err := r.svcs[0].newRecord(context.Background(), interaction.AskInput{Request: twoQuestions()})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := r.svcs[0].store.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		r.run(0)
		time.Sleep(postGrace - time.Second)
		synctest.Wait()
		if n := r.surf.count(&r.surf.posts, rec.ID); n != 0 {
			t.Fatalf("posted within postGrace: %d", n)
		}
		time.Sleep(time.Second + duePoll)
		synctest.Wait()
		if n := r.surf.count(&r.surf.posts, rec.ID); n != 1 || r.get(rec.ID).TS == "" {
			t.Fatalf("%d posts, ts %q", n, r.get(rec.ID).TS)
		}
	})
}

// Wait and Notify on one replica return when another ends the ask.
func TestWaitersWakeOnAnotherReplicasEnd(t *testing.T) {
	r := newReplicas(t, nil, nil)
	r.run(0)
	r.run(1)
	ctx := context.Background()
	ask := r.create(0)
	notified := make(chan interaction.Ask, 1)
	defer r.svcs[0].Notify(ask.ID, func(a interaction.Ask) { notified <- a })()
	waited := make(chan interaction.Ask, 1)
	ready := make(chan struct{})
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		go func() {
			// Wait registers before it reads; the read is the sentinel
			// that it is waiting.
			waitFor(t, "the waiter registered", func() bool { return r.svcs[0].waiters.has(ask.ID) })
			close(ready)
		}()
		a, _ := r.svcs[0].Wait(wctx, ask.ID)
		waited <- a
	}()
	<-ready
	if _, err := r.svcs[1].Cancel(ctx, click(ask, alice)); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan interaction.Ask{waited, notified} {
		if a := <-ch; a.Status != interaction.StatusCancelled {
			t.Fatalf("woken with %s", a.Status)
		}
	}
}

// heldSurface holds its first Update until released, as a slow chat.update
// from one replica. With fail set, that update then fails with it and
// draws nothing (landed is not closed).
type heldSurface struct {
	*surface
	held    atomic.Bool
	entered chan struct{}
	release chan struct{}
	landed  chan struct{}
	fail    error
}

func (h *heldSurface) Update(ctx context.Context, rec Record) error {
	if h.held.CompareAndSwap(false, true) {
		close(h.entered)
		<-h.release
		if h.fail != nil {
			return h.fail
		}
		defer close(h.landed)
	}
	return h.surface.Update(ctx, rec)
}

// newHeldReplicas runs n replicas (1 or 2) on one store: the first
// renders through held, whose first Update waits for release and then
// fails with fail or lands, the second straight onto base; r.surf is base.
func newHeldReplicas(t *testing.T, n int, fail error) (r *replicas, base *surface, held *heldSurface) {
	t.Helper()
	base = newSurface()
	held = &heldSurface{surface: base, entered: make(chan struct{}), release: make(chan struct{}), landed: make(chan struct{}), fail: fail}
	surfaces := []Surface{held, base}[:n]
	r = newReplicas(t, surfaces...)
	r.surf = base
	for i := range n {
		r.run(i)
	}
	return r, base, held
}

// Two replicas update one message out of order: the older rendering lands
// last, and the message is brought forward again.
func TestMessageNeverGoesBack(t *testing.T) {
	r, base, held := newHeldReplicas(t, 2, nil)
	ask := r.create(0)
	r.other(0, ask, 0, "first")
	<-held.entered // replica 0's update of rev 2 is on its way
	r.other(1, ask, 1, "second")
	// Replica 1's rendering lands and is checked; the record stays
	// unsynced, as replica 0 is listed drawing it (its update may land
	// after; drawers.go).
	waitFor(t, "replica 1's rendering landed and was checked", func() bool {
		u, ok := base.lastUpdate(ask.ID)
		rec := r.get(ask.ID)
		return ok && u.Rev == 3 && !drawing(rec, r.svcs[1]) && drawing(rec, r.svcs[0]) && !rec.Synced
	})
	close(held.release) // rev 2 lands after rev 3
	<-held.landed
	waitFor(t, "the message shows rev 3 again", func() bool {
		u, _ := base.lastUpdate(ask.ID)
		return u.Rev == 3 && r.get(ask.ID).Synced
	})
	r.svcs[0].syncer.waitIdle(context.Background())
	if n := base.count(&base.updates, ask.ID); n != 3 {
		t.Fatalf("%d updates, want 3 (rev 2, rev 3 by each replica)", n)
	}
}

// drawing reports whether rec lists svc as drawing its message.
func drawing(rec Record, svc *Service) bool {
	for _, d := range rec.Drawers {
		if d.Proc == svc.holder {
			return true
		}
	}
	return false
}

// failingSurface fails the first n Updates.
type failingSurface struct {
	*surface
	n atomic.Int64
}

func (f *failingSurface) Update(ctx context.Context, rec Record) error {
	if f.n.Add(-1) >= 0 {
		return errors.New("chat.update: internal_error")
	}
	return f.surface.Update(ctx, rec)
}

// A message update that keeps failing is retried with backoff until the
// message matches the record (issue 14.4: it was given up after five).
func TestSyncRetriesUntilTheMessageMatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSurface()
		fs := &failingSurface{surface: base}
		r := newReplicas(t, fs)
		r.surf = base
		r.run(0)
		ctx := context.Background()
		ask := r.create(0)
		fs.n.Store(9)
		if _, err := r.svcs[0].Cancel(ctx, click(ask, alice)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		u, ok := base.lastUpdate(ask.ID)
		if rec := r.get(ask.ID); !ok || u.Status != interaction.StatusCancelled || !rec.Synced || !rec.WakeAt.IsZero() {
			t.Fatalf("message %v %s; record synced %v wake %v (failures left %d)", ok, u.Status, rec.Synced, rec.WakeAt, fs.n.Load())
		}
	})
}

// A click on a rendering older than the record's, on an ask whose record
// says its message is in step, re-sends the message (issue 14.4: the
// click got "already answered" and the buttons stayed live).
func TestStaleClickResyncs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t, nil)
		r.run(0)
		ctx := context.Background()
		ask := r.create(0)
		if _, err := r.svcs[0].Cancel(ctx, click(ask, bob)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		before := r.surf.count(&r.surf.updates, ask.ID)
		// One update shows the cancel; a sync of the posted message that
		// raced with the cancel may have made one more (1 run in 20).
		if !r.get(ask.ID).Synced || before < 1 {
			t.Fatalf("after the cancel: synced %v, %d updates", r.get(ask.ID).Synced, before)
		}
		// The person still sees rev 1 (that update never showed) and clicks.
		if _, err := r.svcs[0].Submit(ctx, click(ask, alice), map[int][]int{0: {0}}); !errors.Is(err, ErrEnded) {
			t.Fatalf("submit on the ended ask: %v", err)
		}
		synctest.Wait()
		if n := r.surf.count(&r.surf.updates, ask.ID); n != before+1 || !r.get(ask.ID).Synced {
			t.Fatalf("%d updates after the stale click, want %d", n, before+1)
		}
		// A click on the current rendering changes nothing.
		act := click(ask, alice)
		act.Rev = r.get(ask.ID).Rev
		if _, err := r.svcs[0].Submit(ctx, act, nil); !errors.Is(err, ErrEnded) {
			t.Fatal(err)
		}
		synctest.Wait()
		if n := r.surf.count(&r.surf.updates, ask.ID); n != before+1 {
			t.Fatalf("%d updates after a click on the current message", n)
		}
	})
}

// An added duty runs when its time comes, on one replica, and is retried
// with backoff until it succeeds.
func TestDutyRunsUntilDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t, nil, nil)
		var calls atomic.Int64
		for _, svc := range r.svcs {
			svc.AddDuty(Duty{
				Name: "note",
				When: func(rec Record) time.Time {
					if !rec.Status.Ended() || rec.Note == "delivered" {
						return time.Time{}
					}
					return *rec.EndedAt
				},
				Do: func(ctx context.Context, rec Record) error {
					if calls.Add(1) < 3 {
						return errors.New("refused")
					}
					_, err := svc.store.Update(ctx, rec.ID, func(x *Record) error { x.Note = "delivered"; return nil })
					return err
				},
			})
		}
		r.run(0)
		r.run(1)
		ctx := context.Background()
		ask := r.create(0)
		if _, err := r.svcs[1].Cancel(ctx, click(ask, alice)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		if rec := r.get(ask.ID); calls.Load() != 3 || rec.Note != "delivered" || !rec.WakeAt.IsZero() {
			t.Fatalf("%d calls, note %q, wake %v", calls.Load(), rec.Note, rec.WakeAt)
		}
	})
}

// An ask an earlier process stored but had not posted when it died: its
// post may land after the restart (Slack finishes a request whose client
// was killed). Recovery adopts a message that is already there, posts
// nothing at start, and a message that lands later is adopted rather than
// posted again; only an ask whose message never came is posted, once
// postGrace has passed.
func TestLeftAskAdoptedAtStartPostedOnlyAfterGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t, nil)
		ctx := context.Background()
		left := func() Record {
			rec, err := r.svcs[0].newRecord(ctx, interaction.AskInput{Request: twoQuestions()})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := r.st.Create(ctx, rec); err != nil {
				t.Fatal(err)
			}
			return rec
		}
		there, late, never := left(), left(), left()
		r.surf.mu.Lock()
		r.surf.found[there.ID] = "1600000000.000001"
		r.surf.mu.Unlock()
		time.Sleep(time.Second) // the earlier process died a second ago
		r.run(0)
		synctest.Wait()
		if got := r.get(there.ID).TS; got != "1600000000.000001" {
			t.Fatalf("message already there not adopted at start: ts %q", got)
		}
		if n := len(r.surf.posts); n != 0 {
			t.Fatalf("%d posts at start, want none while a post may be in flight", n)
		}
		time.Sleep(100 * time.Millisecond) // the dead process's post lands
		r.surf.mu.Lock()
		r.surf.found[late.ID] = "1600000000.000002"
		r.surf.mu.Unlock()
		time.Sleep(postGrace + duePoll)
		synctest.Wait()
		if got := r.get(late.ID).TS; got != "1600000000.000002" || r.surf.count(&r.surf.posts, late.ID) != 0 {
			t.Fatalf("late message: ts %q, %d posts; want it adopted, not posted again", got, r.surf.count(&r.surf.posts, late.ID))
		}
		if n := r.surf.count(&r.surf.posts, never.ID); n != 1 || r.get(never.ID).TS == "" {
			t.Fatalf("ask never posted: %d posts after postGrace, ts %q", n, r.get(never.ID).TS)
		}
		if n := r.surf.count(&r.surf.posts, there.ID); n != 0 {
			t.Fatalf("adopted ask posted %d times", n)
		}
	})
}

// Failures of one duty that come before its paced attempt was due (the
// syncer and the dispatcher both try during one outage) are one step of
// the backoff, and no pause exceeds retryMax: a message left stale by an
// outage is retried within retryMax of Slack coming back.
func TestRetryPacingOneStepPerOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t, nil)
		c := r.svcs[0].sched
		at := func() time.Duration {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.retry[retryKey{"a1", dutySync}].at.Sub(time.Now())
		}
		c.failed("a1", dutySync)
		first := at()
		for range 6 {
			c.failed("a1", dutySync)
		}
		if got := at(); got != first {
			t.Fatalf("six failures before the paced attempt moved it from %v to %v", first, got)
		}
		for range 20 {
			time.Sleep(at())
			c.failed("a1", dutySync)
			if got := at(); got > retryMax+retryMax/5 {
				t.Fatalf("pause %v over retryMax %v", got, retryMax)
			}
		}
	})
}

// deadSurface is the surface of a process that dies with its first
// Update in flight: that update lands when released, after the process's
// successor has started, and nothing else the process sends lands.
type deadSurface struct {
	*surface
	first   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

var errSenderDied = errors.New("the process died before Slack answered")

func (d *deadSurface) Update(ctx context.Context, rec Record) error {
	if !d.first.CompareAndSwap(false, true) {
		return errSenderDied
	}
	close(d.entered)
	<-d.release
	_ = d.surface.Update(ctx, rec) // Slack applies it; its sender never hears
	return errSenderDied
}

// newDeadReplicas makes two replicas on one store, the first rendering
// through dead (it dies with its first Update in flight), the second
// straight onto base; r.surf is base. It runs the first and returns its
// stop: the caller runs the second when it is due.
func newDeadReplicas(t *testing.T) (r *replicas, base *surface, dead *deadSurface, stop0 func()) {
	t.Helper()
	base = newSurface()
	dead = &deadSurface{surface: base, entered: make(chan struct{}), release: make(chan struct{})}
	r = newReplicas(t, dead, base)
	r.surf = base
	return r, base, dead, r.run(0)
}

// A process dies with a message update in flight; its successor renders
// newer changes, and then the dead process's older update lands. The
// successor held the record unsynced since it found it so at start, and
// renders it again once the dead update can no longer land.
func TestDeadProcessUpdateLandingLateIsUndone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, base, dead, stop0 := newDeadReplicas(t)
		ask := r.create(0)
		r.other(0, ask, 0, "first")
		<-dead.entered // the rendering of rev 2 is on its way when the process dies
		r.run(1)       // its successor
		r.other(1, ask, 1, "second")
		synctest.Wait()
		if u, _ := base.lastUpdate(ask.ID); u.Rev != 3 {
			t.Fatalf("the successor's rendering: rev %d, want 3", u.Rev)
		}
		close(dead.release) // rev 2 lands after rev 3
		synctest.Wait()
		stop0()
		if u, _ := base.lastUpdate(ask.ID); u.Rev != 2 || r.get(ask.ID).Synced {
			t.Fatalf("after the late landing: rev %d shown, synced %v", u.Rev, r.get(ask.ID).Synced)
		}
		time.Sleep(postGrace)
		synctest.Wait()
		u, _ := base.lastUpdate(ask.ID)
		if rec := r.get(ask.ID); u.Rev != rec.Rev || u.Progress[1].Custom != "second" || !rec.Synced {
			t.Fatalf("after the hold: rev %d shown of %d, synced %v", u.Rev, rec.Rev, rec.Synced)
		}
	})
}

// A mark of a record older than the one being rendered (a snapshot taken
// before the change, as a claim or a listing) is dropped: rendering it
// after the newer one would draw an older state.
func TestSyncerDropsAnOlderMarkWhileANewerRenders(t *testing.T) {
	r, base, held := newHeldReplicas(t, 1, nil)
	ctx := context.Background()
	ask := r.create(0)
	stale := r.get(ask.ID)
	r.other(0, ask, 0, "first")
	<-held.entered // rev 2 is being rendered
	stale.Synced = false
	r.svcs[0].syncer.mark(stale)
	close(held.release)
	<-held.landed
	waitFor(t, "synced", func() bool { return r.get(ask.ID).Synced })
	r.svcs[0].syncer.waitIdle(ctx)
	if u, _ := base.lastUpdate(ask.ID); u.Rev != 2 || base.count(&base.updates, ask.ID) != 1 {
		t.Fatalf("last rendering rev %d after %d updates, want rev 2 once", u.Rev, base.count(&base.updates, ask.ID))
	}
}

// The dispatcher renders a claimed record as it stands when it handles
// it, not as it was claimed: a change rendered in between is not drawn
// over with the older state.
func TestDueSyncRendersTheRecordAsItStands(t *testing.T) {
	r := newReplicas(t, nil)
	r.run(0)
	ctx := context.Background()
	ask := r.create(0)
	claimed := r.get(ask.ID)
	claimed.Synced = false // claimed while a change was on its way
	r.other(0, ask, 0, "first")
	waitFor(t, "the change rendered", func() bool { return r.get(ask.ID).Synced })
	n := r.surf.count(&r.surf.updates, ask.ID)
	r.svcs[0].sched.handle(ctx, claimed)
	r.svcs[0].syncer.waitIdle(ctx)
	if u, _ := r.surf.lastUpdate(ask.ID); u.Rev != 2 || r.surf.count(&r.surf.updates, ask.ID) != n {
		t.Fatalf("after the claim: rev %d shown, %d updates (%d before)", u.Rev, r.surf.count(&r.surf.updates, ask.ID), n)
	}
}

// A change made while the update of the one before is in flight is
// rendered once: the update that lands finds the record moved on and
// renders the newer one itself, and the mark of that change is then in
// step already (issue 29: chat.update per visible change).
func TestChangeDuringAnUpdateIsRenderedOnce(t *testing.T) {
	r, base, held := newHeldReplicas(t, 1, nil)
	ctx := context.Background()
	ask := r.create(0)
	r.other(0, ask, 0, "first")
	<-held.entered               // rev 2 is being rendered
	r.other(0, ask, 1, "second") // rev 3, marked while rev 2 is in flight
	close(held.release)
	<-held.landed
	waitFor(t, "synced", func() bool { return r.get(ask.ID).Synced })
	r.svcs[0].syncer.waitIdle(ctx)
	if u, _ := base.lastUpdate(ask.ID); u.Rev != 3 || base.count(&base.updates, ask.ID) != 2 {
		t.Fatalf("last rendering rev %d after %d updates, want rev 3 after 2 (one per change)", u.Rev, base.count(&base.updates, ask.ID))
	}
}

// The mark of a change that reaches the syncer only after an update loop
// rendered that change itself (its check found the record moved on) and
// ended is not rendered a second time.
func TestLateMarkOfARenderedChangeIsDropped(t *testing.T) {
	r, base, held := newHeldReplicas(t, 1, nil)
	ctx := context.Background()
	ask := r.create(0)
	r.other(0, ask, 0, "first")
	<-held.entered // rev 2 is being rendered
	// A change stored by a process whose mark is late (here: not yet made).
	changed, err := r.st.Update(ctx, ask.ID, func(rec *Record) error {
		rec.Note, rec.Rev, rec.Synced = "late", rec.Rev+1, false
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	close(held.release)
	<-held.landed
	waitFor(t, "synced", func() bool { return r.get(ask.ID).Synced })
	r.svcs[0].syncer.waitIdle(ctx)
	r.svcs[0].syncer.mark(changed) // the late mark
	r.svcs[0].syncer.waitIdle(ctx)
	if u, _ := base.lastUpdate(ask.ID); u.Rev != changed.Rev || base.count(&base.updates, ask.ID) != 2 {
		t.Fatalf("last rendering rev %d after %d updates, want rev %d after 2", u.Rev, base.count(&base.updates, ask.ID), changed.Rev)
	}
}

// A replica is killed with its update of an older state in flight while
// another, alive all along, ends the ask, draws the end and checks it;
// then the dead replica's update lands (issue 30: the message stayed live
// on an answered ask, as nobody draws a record marked synced). The live
// replica, finding the dead one listed as drawing the ask, left the record
// unsynced and draws it once more when that update can no longer land.
func TestDeadReplicasUpdateLandingAfterAnotherSyncedIsUndone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, base, dead, stop0 := newDeadReplicas(t)
		r.run(1)
		ctx := context.Background()
		ask := r.create(0)
		r.other(0, ask, 0, "first") // rev 2, drawn by replica 0
		<-dead.entered              // its update is on its way when replica 0 is killed
		stopped := make(chan struct{})
		go func() { stop0(); close(stopped) }() // returns once the update does
		synctest.Wait()
		if _, err := r.svcs[1].Cancel(ctx, click(ask, bob)); err != nil { // rev 3
			t.Fatal(err)
		}
		synctest.Wait()
		if u, _ := base.lastUpdate(ask.ID); u.Status != interaction.StatusCancelled {
			t.Fatalf("replica 1 drew %s, want the end", u.Status)
		}
		close(dead.release) // rev 2 lands after the end
		<-stopped
		synctest.Wait()
		if u, _ := base.lastUpdate(ask.ID); u.Rev != 2 {
			t.Fatalf("after the late landing: rev %d shown, want 2", u.Rev)
		}
		time.Sleep(postGrace)
		synctest.Wait()
		u, _ := base.lastUpdate(ask.ID)
		if rec := r.get(ask.ID); u.Rev != rec.Rev || u.Status != interaction.StatusCancelled || !rec.Synced {
			t.Fatalf("after postGrace: rev %d (%s) shown of rev %d (%s), synced %v", u.Rev, u.Status, rec.Rev, rec.Status, rec.Synced)
		}
		if n := base.count(&base.updates, ask.ID); n != 3 {
			t.Fatalf("%d updates, want 3 (rev 2, the end, the end again)", n)
		}
	})
}

// The same crossing with the first replica alive: its own check after its
// update finds the end and draws it, marking the record synced, so nothing
// is drawn again when its listing runs out: one update per replica (a
// living lister's listing costs no update of its own).
func TestLiveReplicasCrossingIsNotDrawnAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, base, held := newHeldReplicas(t, 2, nil)
		ctx := context.Background()
		ask := r.create(0)
		r.other(0, ask, 0, "first") // rev 2, drawn by replica 0
		<-held.entered
		if _, err := r.svcs[1].Cancel(ctx, click(ask, bob)); err != nil { // rev 3
			t.Fatal(err)
		}
		synctest.Wait()
		if rec := r.get(ask.ID); rec.Synced || drawing(rec, r.svcs[1]) || !drawing(rec, r.svcs[0]) {
			t.Fatalf("after replica 1 drew the end: synced %v, drawers %v; want it held for replica 0", rec.Synced, rec.Drawers)
		}
		close(held.release) // rev 2 lands after the end
		synctest.Wait()
		rec := r.get(ask.ID)
		if u, _ := base.lastUpdate(ask.ID); u.Rev != rec.Rev || !rec.Synced || len(rec.Drawers) != 0 {
			t.Fatalf("after replica 0's check: rev %d shown of %d, synced %v, drawers %v", u.Rev, rec.Rev, rec.Synced, rec.Drawers)
		}
		time.Sleep(2 * postGrace)
		synctest.Wait()
		if n := base.count(&base.updates, ask.ID); n != 3 {
			t.Fatalf("%d updates, want 3 (rev 2, the end by each replica)", n)
		}
	})
}

// On one replica a record's drawers cost no update and no write: the
// change that needs drawing lists its process, the write that marks it
// synced unlists it.
func TestOneReplicaListsItsDrawsInItsWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newReplicas(t, nil)
		r.run(0)
		ask := r.create(0)
		before := r.get(ask.ID).Version
		r.other(0, ask, 0, "first")
		synctest.Wait()
		rec := r.get(ask.ID)
		if !rec.Synced || len(rec.Drawers) != 0 || rec.Version != before+2 {
			t.Fatalf("synced %v, drawers %v, %d writes; want synced, none, 2 (the change, synced)", rec.Synced, rec.Drawers, rec.Version-before)
		}
		if n := r.surf.count(&r.surf.updates, ask.ID); n != 1 {
			t.Fatalf("%d updates, want 1", n)
		}
	})
}
