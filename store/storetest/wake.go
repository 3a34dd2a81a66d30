package storetest

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// wakingAt returns a pending record whose WakeAt is wake.
func wakingAt(id string, wake time.Time) store.Record {
	r := pendingAt(id, base)
	r.WakeAt = wake
	return r
}

func mustClaim(t *testing.T, s store.Store, now time.Time, lease time.Duration, limit int) []store.Record {
	t.Helper()
	rs, err := s.ClaimDue(t.Context(), now, lease, limit)
	if err != nil {
		t.Fatalf("ClaimDue(%v, %v, %d): %v", now, lease, limit, err)
	}
	return rs
}

func testClaimDueOrder(t *testing.T, s store.Store) {
	now := base.Add(time.Hour)
	mustCreate(t, s, wakingAt("late", now.Add(-time.Second)))
	mustCreate(t, s, wakingAt("early", now.Add(-time.Hour)))
	mustCreate(t, s, wakingAt("mid-b", now.Add(-time.Minute)))
	mustCreate(t, s, wakingAt("mid-a", now.Add(-time.Minute)))
	mustCreate(t, s, wakingAt("exact", now))
	mustCreate(t, s, wakingAt("future", now.Add(time.Nanosecond)))
	mustCreate(t, s, wakingAt("never", time.Time{}))
	const lease = 30 * time.Second
	got := mustClaim(t, s, now, lease, 100)
	if want := []string{"early", "mid-a", "mid-b", "late", "exact"}; !reflect.DeepEqual(ids(got), want) {
		t.Fatalf("ClaimDue = %v, want %v (due only, earliest WakeAt first, then id)", ids(got), want)
	}
	for _, r := range got {
		if !r.WakeAt.Equal(now.Add(lease)) || r.Version != 2 {
			t.Errorf("claimed %s: WakeAt %v version %d, want %v and 2", r.ID, r.WakeAt, r.Version, now.Add(lease))
		}
		if d := Diff(wakingAt(r.ID, now.Add(lease)), r); d != "" {
			t.Errorf("claimed %s differs from the record with its new WakeAt:\n%s", r.ID, d)
		}
		if g := mustGet(t, s, r.ID); !g.WakeAt.Equal(now.Add(lease)) || g.Version != 2 {
			t.Errorf("Get(%s) after the claim: WakeAt %v version %d", r.ID, g.WakeAt, g.Version)
		}
	}
	if again := mustClaim(t, s, now, lease, 100); len(again) != 0 {
		t.Errorf("a second ClaimDue within the lease = %v, want none", ids(again))
	}
	for _, id := range []string{"future", "never"} {
		if g := mustGet(t, s, id); g.Version != 1 {
			t.Errorf("%s was not due but its version is %d", id, g.Version)
		}
	}
}

func testClaimDueLimit(t *testing.T, s store.Store) {
	now := base.Add(time.Hour)
	for i := range 5 {
		mustCreate(t, s, wakingAt(fmt.Sprintf("r%d", i), now.Add(-time.Duration(5-i)*time.Minute)))
	}
	if got := mustClaim(t, s, now, time.Minute, 0); len(got) != 0 {
		t.Errorf("ClaimDue with limit 0 = %v, want none", ids(got))
	}
	if got := mustClaim(t, s, now, time.Minute, 2); !reflect.DeepEqual(ids(got), []string{"r0", "r1"}) {
		t.Errorf("first ClaimDue(limit 2) = %v, want [r0 r1]", ids(got))
	}
	if got := mustClaim(t, s, now, time.Minute, 2); !reflect.DeepEqual(ids(got), []string{"r2", "r3"}) {
		t.Errorf("second ClaimDue(limit 2) = %v, want [r2 r3]", ids(got))
	}
	if got := mustClaim(t, s, now, time.Minute, 2); !reflect.DeepEqual(ids(got), []string{"r4"}) {
		t.Errorf("third ClaimDue(limit 2) = %v, want [r4]", ids(got))
	}
}

func testClaimDueLeaseExpiry(t *testing.T, s store.Store) {
	now := base.Add(time.Hour)
	const lease = time.Minute
	mustCreate(t, s, wakingAt("a", now))
	if got := mustClaim(t, s, now, lease, 10); len(got) != 1 {
		t.Fatalf("ClaimDue = %v, want [a]", ids(got))
	}
	if got := mustClaim(t, s, now.Add(lease-time.Nanosecond), lease, 10); len(got) != 0 {
		t.Errorf("ClaimDue just before the lease ends = %v, want none", ids(got))
	}
	got := mustClaim(t, s, now.Add(lease), lease, 10)
	if len(got) != 1 || got[0].Version != 3 || !got[0].WakeAt.Equal(now.Add(2*lease)) {
		t.Fatalf("ClaimDue once the lease ended = %+v, want a again with version 3", got)
	}
}

// claimAll runs claimers goroutines, each claiming up to 3 records at a
// time from its store until none is left, and returns how often each id
// was handed out.
func claimAll(t *testing.T, stores []store.Store, claimers int, now time.Time) map[string]int {
	var mu sync.Mutex
	got := map[string]int{}
	parallel(claimers, func(i int) {
		s := stores[i%len(stores)]
		for {
			rs, err := s.ClaimDue(t.Context(), now, time.Hour, 3)
			if err != nil {
				t.Errorf("ClaimDue: %v", err)
				return
			}
			if len(rs) == 0 {
				return
			}
			mu.Lock()
			for _, r := range rs {
				got[r.ID]++
			}
			mu.Unlock()
		}
	})
	return got
}

func checkClaimedOnce(t *testing.T, got map[string]int, n int) {
	t.Helper()
	if len(got) != n {
		t.Errorf("%d of %d due records were claimed", len(got), n)
	}
	for id, k := range got {
		if k != 1 {
			t.Errorf("%s was claimed %d times, want once", id, k)
		}
	}
}

func testClaimDueConcurrent(t *testing.T, s store.Store) {
	now := base.Add(time.Hour)
	const n = 60
	for i := range n {
		mustCreate(t, s, wakingAt(fmt.Sprintf("r%02d", i), now.Add(-time.Duration(i)*time.Second)))
	}
	checkClaimedOnce(t, claimAll(t, []store.Store{s}, 8, now), n)
}

func testClaimDueThenUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := base.Add(time.Hour)
	mustCreate(t, s, wakingAt("done", now))
	mustCreate(t, s, wakingAt("retry", now))
	if got := mustClaim(t, s, now, time.Hour, 10); len(got) != 2 {
		t.Fatalf("ClaimDue = %v", ids(got))
	}
	if _, err := s.Update(ctx, "done", func(r *store.Record) error { r.WakeAt = time.Time{}; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "retry", func(r *store.Record) error { r.WakeAt = now.Add(time.Second); return nil }); err != nil {
		t.Fatal(err)
	}
	if g := mustGet(t, s, "done"); !g.WakeAt.IsZero() {
		t.Errorf("WakeAt set to zero by Update reads back as %v", g.WakeAt)
	}
	got := mustClaim(t, s, now.Add(10*time.Hour), time.Minute, 10)
	if !reflect.DeepEqual(ids(got), []string{"retry"}) {
		t.Errorf("ClaimDue after the updates = %v, want [retry] (a zero WakeAt is never due)", ids(got))
	}
}

// watchLog collects the changes a watcher sees.
type watchLog struct {
	mu  sync.Mutex
	all []store.Change
	ch  chan struct{} // signalled on each change
}

func newWatchLog() *watchLog { return &watchLog{ch: make(chan struct{}, 1)} }

func (w *watchLog) fn(c store.Change) {
	w.mu.Lock()
	w.all = append(w.all, c)
	w.mu.Unlock()
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (w *watchLog) snapshot() []store.Change {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]store.Change(nil), w.all...)
}

// waitFor waits until the log holds a change for which ok is true and
// returns the changes seen so far. It fails the test after 10s.
func (w *watchLog) waitFor(t *testing.T, what string, ok func(store.Change) bool) []store.Change {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		all := w.snapshot()
		for _, c := range all {
			if ok(c) {
				return all
			}
		}
		select {
		case <-w.ch:
		case <-timeout:
			t.Fatalf("no change %s within 10s; saw %+v", what, all)
		}
	}
}

func is(id string, version int64, deleted bool) func(store.Change) bool {
	return func(c store.Change) bool { return c.ID == id && c.Version == version && c.Deleted == deleted }
}

// checkWatchSeesWrites writes through w and checks that log, watching r,
// sees each write (Create, Update, ClaimDue, Delete, Prune) in order.
func checkWatchSeesWrites(t *testing.T, w store.Store, log *watchLog) {
	ctx := t.Context()
	now := base.Add(time.Hour)
	mustCreate(t, w, wakingAt("a", now))
	if _, err := w.Update(ctx, "a", func(r *store.Record) error { r.Status = interaction.StatusAnswered; r.EndedAt = &now; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := mustClaim(t, w, now, time.Minute, 10); len(got) != 1 {
		t.Fatalf("ClaimDue = %v", ids(got))
	}
	mustCreate(t, w, pendingAt("b", base))
	if err := w.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Prune(ctx, now.Add(time.Second)); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	all := log.waitFor(t, "for the prune of a", is("a", 3, true))
	var seen []string
	for _, c := range all {
		if c.Resync {
			continue
		}
		seen = append(seen, fmt.Sprintf("%s v%d %s deleted=%v", c.ID, c.Version, c.Status, c.Deleted))
	}
	want := []string{
		"a v1 pending deleted=false",
		"a v2 answered deleted=false",
		"a v3 answered deleted=false",
		"b v1 pending deleted=false",
		"b v1 pending deleted=true",
		"a v3 answered deleted=true",
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("watcher saw\n%v\nwant\n%v", seen, want)
	}
}

func testWatchSeesWrites(t *testing.T, s store.Store) {
	log := newWatchLog()
	stop := s.Watch(log.fn)
	defer stop()
	checkWatchSeesWrites(t, s, log)
}

func testWatchStop(t *testing.T, s store.Store) {
	stopped, live := newWatchLog(), newWatchLog()
	stop := s.Watch(stopped.fn)
	stopLive := s.Watch(live.fn)
	mustCreate(t, s, pendingAt("a", base))
	stopped.waitFor(t, "for a", is("a", 1, false))
	stop()
	stop() // a second stop does nothing
	mustCreate(t, s, pendingAt("b", base))
	mustCreate(t, s, pendingAt("c", base))
	live.waitFor(t, "for c", is("c", 1, false))
	for _, c := range stopped.snapshot() {
		if c.ID != "a" && !c.Resync {
			t.Errorf("a stopped watcher saw %+v", c)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	stopLive() // after Close, stop still does nothing harmful
	after := s.Watch(func(store.Change) { t.Error("a watcher added after Close was called") })
	after()
}

func mustLease(t *testing.T, s store.Store, name, holder string, ttl time.Duration) bool {
	t.Helper()
	held, err := s.Lease(t.Context(), name, holder, ttl)
	if err != nil {
		t.Fatalf("Lease(%s, %s, %v): %v", name, holder, ttl, err)
	}
	return held
}

func testLease(t *testing.T, s store.Store) {
	checkLease(t, s, s)
}

// checkLease checks exclusion, renewal and release of a lease taken
// through a and b (one store or two on one database).
func checkLease(t *testing.T, a, b store.Store) {
	if !mustLease(t, a, "bridge", "A", time.Hour) {
		t.Fatal("A could not take a free lease")
	}
	if mustLease(t, b, "bridge", "B", time.Hour) {
		t.Fatal("B took a lease A holds")
	}
	if !mustLease(t, b, "other", "B", time.Hour) {
		t.Error("leases of other names are independent: B could not take another one")
	}
	if !mustLease(t, a, "bridge", "A", time.Hour) {
		t.Error("A could not renew its lease")
	}
	if mustLease(t, b, "bridge", "B", 0) {
		t.Error("releasing reported held")
	}
	if mustLease(t, b, "bridge", "B", time.Hour) {
		t.Error("B's release of a lease it does not hold freed A's lease")
	}
	if mustLease(t, a, "bridge", "A", -time.Second) {
		t.Error("releasing reported held")
	}
	if !mustLease(t, b, "bridge", "B", time.Hour) {
		t.Error("B could not take the lease A released")
	}
}

func testLeaseExpires(t *testing.T, s store.Store) {
	if !mustLease(t, s, "bridge", "A", 50*time.Millisecond) {
		t.Fatal("A could not take a free lease")
	}
	// B polls until A's lease has run out; it must then get it.
	deadline := time.Now().Add(10 * time.Second)
	for !mustLease(t, s, "bridge", "B", time.Hour) {
		if time.Now().After(deadline) {
			t.Fatal("B never got the lease after A's ran out")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if mustLease(t, s, "bridge", "A", time.Hour) {
		t.Error("A took the lease back while B holds it")
	}
}

func testLeaseConcurrent(t *testing.T, s store.Store) {
	checkLeaseConcurrent(t, []store.Store{s})
}

func checkLeaseConcurrent(t *testing.T, stores []store.Store) {
	const n = 16
	var mu sync.Mutex
	var holders []string
	parallel(n, func(i int) {
		h := fmt.Sprintf("h%02d", i)
		held, err := stores[i%len(stores)].Lease(t.Context(), "one", h, time.Hour)
		if err != nil {
			t.Errorf("Lease: %v", err)
		}
		if held {
			mu.Lock()
			holders = append(holders, h)
			mu.Unlock()
		}
	})
	sort.Strings(holders)
	if len(holders) != 1 {
		t.Errorf("%d holders of one lease at once: %v", len(holders), holders)
	}
}

// An Update whose fn sets Quiet is not announced, unless it changes the
// status or emits events (Apply's rule); a write after a quiet one is
// announced again (Quiet is fn's, per write), and so is each op of a
// batch by its own fn.
func testWatchQuiet(t *testing.T, s store.Store) {
	ctx := t.Context()
	log := newWatchLog()
	defer s.Watch(log.fn)()
	mustCreate(t, s, pendingAt("a", base))
	mustCreate(t, s, pendingAt("b", base))
	now := base.Add(time.Minute)
	writes := []struct {
		fn    func(*store.Record) error
		quiet bool
	}{
		{func(r *store.Record) error { r.Rev++; r.Quiet = true; return nil }, true},                                // v2
		{func(r *store.Record) error { r.Rev++; return nil }, false},                                               // v3: fn said nothing
		{func(r *store.Record) error { r.Quiet = true; r.Emit(store.EventReminded, nil, nil); return nil }, false}, // v4: an event
		{func(r *store.Record) error { r.Rev++; r.Quiet = true; return nil }, true},                                // v5
		{func(r *store.Record) error {
			r.Quiet = true
			r.Status = interaction.StatusAnswered
			r.EndedAt = &now
			return nil
		}, false}, // v6: an end
	}
	for i, w := range writes {
		rec, err := s.Update(ctx, "a", w.fn)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Quiet != w.quiet {
			t.Errorf("write %d (v%d): returned Quiet = %v, want %v", i, rec.Version, rec.Quiet, w.quiet)
		}
	}
	want := []string{"a v1", "b v1", "a v3", "a v4", "a v6"}
	if b, ok := s.(store.Batcher); ok {
		ops := []*store.UpdateOp{
			{Ctx: ctx, ID: "b", Fn: func(r *store.Record) error { r.Rev++; r.Quiet = true; return nil }},
			{Ctx: ctx, ID: "b", Fn: func(r *store.Record) error { r.Rev++; return nil }},
			{Ctx: ctx, ID: "b", Fn: func(r *store.Record) error { r.Rev++; r.Quiet = true; return nil }},
		}
		b.UpdateBatch(ops)
		for i, op := range ops {
			if op.Err != nil || op.Rec.Quiet != (i != 1) {
				t.Fatalf("UpdateBatch op %d: %+v, %v", i, op.Rec, op.Err)
			}
		}
		want = append(want, "b v3")
	}
	// The last announced write: after it, every earlier announcement has
	// been made.
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, c := range log.waitFor(t, "for the delete of b", func(c store.Change) bool { return c.ID == "b" && c.Deleted }) {
		if !c.Resync && !c.Deleted {
			seen = append(seen, fmt.Sprintf("%s v%d", c.ID, c.Version))
		}
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("watcher saw %v, want %v", seen, want)
	}
}
