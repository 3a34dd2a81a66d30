package storetest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/store"
)

// RunShared checks what two Stores on one database (two handles, as two
// processes would hold) agree on: a watcher on one sees the other's writes,
// ClaimDue never hands one record to both, concurrent Updates lose nothing,
// an idempotency key makes one record and a lease has one holder. open
// returns two new handles on one new, empty database; it should close both
// in t.Cleanup. A store that cannot share its database (memory, SQLite) does
// not run it.
func RunShared(t *testing.T, open func(t *testing.T) (a, b store.Store)) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, a, b store.Store)
	}{
		{"Watch/SeesOtherHandle", testSharedWatch},
		{"ClaimDue/NeverShared", testSharedClaim},
		{"Update/LoseNothing", testSharedUpdate},
		{"Update/AfterOtherHandle", testSharedUpdateAfterOther},
		{"Update/AfterOtherHandlesQuietWrite", testSharedUpdateAfterQuiet},
		{"Update/AfterDeleteAndCreate", testSharedUpdateAfterRecreate},
		{"Update/PicksThroughBoth", testSharedPicks},
		{"Update/PickAfterDeleteAndCreate", testSharedPickAfterRecreate},
		{"Create/IdempotencyKey", testSharedIdempotency},
		{"Lease/OneHolder", testSharedLease},
		{"Events/FeedConcurrent", testSharedEventsFeed},
		{"Installs/SwapLoseNothing", testSharedSwapInstall},
		{"Installs/NonceOnce", testSharedNonces},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := open(t)
			tc.fn(t, a, b)
		})
	}
}

func testSharedWatch(t *testing.T, a, b store.Store) {
	onA, onB := newWatchLog(), newWatchLog()
	defer a.Watch(onA.fn)()
	defer b.Watch(onB.fn)()
	checkWatchSeesWrites(t, a, onB)
	// The writer's own watcher sees them too.
	onA.waitFor(t, "for the prune of a on the writing handle", is("a", 3, true))
}

func testSharedClaim(t *testing.T, a, b store.Store) {
	now := base.Add(time.Hour)
	const n = 60
	for i := range n {
		mustCreate(t, a, wakingAt(fmt.Sprintf("r%02d", i), now.Add(-time.Duration(i)*time.Second)))
	}
	checkClaimedOnce(t, claimAll(t, []store.Store{a, b}, 8, now), n)
}

func testSharedUpdate(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	mustCreate(t, a, pendingAt("x", base))
	const n = 40
	parallel(n, func(i int) {
		s := []store.Store{a, b}[i%2]
		if _, err := s.Update(ctx, "x", func(r *store.Record) error { r.Rev++; return nil }); err != nil {
			t.Errorf("Update: %v", err)
		}
	})
	for _, s := range []store.Store{a, b} {
		if r := mustGet(t, s, "x"); r.Rev != n || r.Version != n+1 {
			t.Errorf("after %d updates through two handles: rev %d version %d, want %d and %d", n, r.Rev, r.Version, n, n+1)
		}
	}
}

// A handle's Update after the other handle wrote the record works on
// that write, whether or not the handle heard of it yet: none of what the
// handle last wrote itself (a store may keep it) is written over it, and
// fn's refusal of an old copy is not the verdict.
func testSharedUpdateAfterOther(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	mustCreate(t, a, pendingAt("x", base))
	for round := range 5 {
		mustUpdate(t, a, "x", func(r *store.Record) error { r.Rev++; return nil })
		mustUpdate(t, b, "x", func(r *store.Record) error { r.Rev += 10; return nil })
		want := 11 * (round + 1)
		rec, err := a.Update(ctx, "x", func(r *store.Record) error {
			if r.Rev != want {
				return fmt.Errorf("rev %d, want %d", r.Rev, want)
			}
			r.Note = fmt.Sprint(round)
			return nil
		})
		if err != nil || rec.Note != fmt.Sprint(round) || rec.Version != int64(4+3*round) {
			t.Fatalf("round %d: Update after the other handle's: %+v, %v", round, rec, err)
		}
	}
}

// A quiet write through one handle moves the row on unannounced: the
// other handle, which wrote the record last and heard nothing since,
// still works on it (a cached copy is checked against the row, not
// trusted for want of a change), and its next announced write reaches
// both handles' watchers.
func testSharedUpdateAfterQuiet(t *testing.T, a, b store.Store) {
	onA := newWatchLog()
	defer a.Watch(onA.fn)()
	mustCreate(t, a, pendingAt("x", base))
	mustUpdate(t, b, "x", func(r *store.Record) error { r.Rev = 1; return nil }) // b wrote it last
	onA.waitFor(t, "for b's write", is("x", 2, false))
	for round := range 3 {
		q := mustUpdate(t, a, "x", func(r *store.Record) error { r.Note += "q"; r.Quiet = true; return nil })
		if !q.Quiet {
			t.Fatalf("round %d: a quiet write came back announced: %+v", round, q)
		}
		var saw string
		rec := mustUpdate(t, b, "x", func(r *store.Record) error { saw = r.Note; r.Rev++; return nil })
		if want := strings.Repeat("q", round+1); saw != want || rec.Note != want || rec.Version != int64(4+2*round) {
			t.Fatalf("round %d: b's Update after a's quiet write saw note %q and wrote %+v; want note %q, version %d", round, saw, rec, want, 4+2*round)
		}
		onA.waitFor(t, "for b's write after the quiet one", is("x", rec.Version, false))
	}
	for _, c := range onA.snapshot() {
		if c.Version == 3 || c.Version == 5 || c.Version == 7 {
			t.Errorf("a quiet write was announced: %+v", c)
		}
	}
}

// A record deleted and created again through the other handle, with the
// same id and so the same version as the one a handle last wrote, is the
// one that handle's Update works on.
func testSharedUpdateAfterRecreate(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	first := pendingAt("x", base)
	first.Note = "first"
	mustCreate(t, a, first)
	if err := b.Delete(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	second := pendingAt("x", base)
	second.Note = "second"
	mustCreate(t, b, second)
	var saw string
	rec, err := a.Update(ctx, "x", func(r *store.Record) error { saw = r.Note; r.Rev = 3; return nil })
	if err != nil || saw != "second" || rec.Note != "second" || rec.Version != 2 {
		t.Fatalf("Update after a delete and create elsewhere: saw %q, got %+v, %v", saw, rec, err)
	}
	if got := mustGet(t, b, "x"); got.Note != "second" || got.Rev != 3 {
		t.Fatalf("stored %+v", got)
	}
}

func testSharedIdempotency(t *testing.T, a, b store.Store) {
	const n = 16
	var (
		mu      sync.Mutex
		created []string
		seen    = map[string]bool{}
	)
	parallel(n, func(i int) {
		r := pendingAt(fmt.Sprintf("try-%02d", i), base)
		r.IdempotencyKey = "same-key"
		rec, ok, err := []store.Store{a, b}[i%2].Create(context.Background(), r)
		if err != nil {
			t.Errorf("Create: %v", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		seen[rec.ID] = true
		if ok {
			created = append(created, rec.ID)
		}
	})
	if len(created) != 1 || len(seen) != 1 {
		t.Errorf("%d Creates with one key through two handles: created %v, returned ids %v; want one record", n, created, seen)
	}
}

func testSharedLease(t *testing.T, a, b store.Store) {
	checkLease(t, a, b)
	checkLeaseConcurrent(t, []store.Store{a, b})
}

func mustUpdate(t *testing.T, s store.Store, id string, fn func(*store.Record) error) store.Record {
	t.Helper()
	r, err := s.Update(t.Context(), id, fn)
	if err != nil {
		t.Fatalf("Update %s: %v", id, err)
	}
	return r
}
