package asks

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
)

// drawnBack describes the first rendering of ask id that f drew after a
// newer one ("" when none): the message went back to an older state (live
// controls on an ended ask, when the newer one drew the end).
func drawnBack(f *surface, id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	newest := Record{}
	for _, u := range f.updates {
		switch {
		case u.ID != id:
		case u.Rev < newest.Rev:
			return "rev " + strconv.Itoa(u.Rev) + " (" + string(u.Status) + ") drawn after rev " + strconv.Itoa(newest.Rev) + " (" + string(newest.Status) + ")"
		default:
			newest = u
		}
	}
	return ""
}

// pausedSurface refuses its first Update for the rate limit, as Slack's
// 429 with a Retry-After of one second.
type pausedSurface struct {
	*surface
	refused atomic.Int64
}

func (l *pausedSurface) Update(ctx context.Context, rec Record) error {
	if l.refused.Add(1) == 1 {
		return &RateLimited{RetryAfter: time.Second}
	}
	return l.surface.Update(ctx, rec)
}

// A replica's update refused for the rate limit is not sent as it was
// after the pause: the record is read again and rendered as it stands.
// Here another replica ended the ask during the pause and drew it ended;
// the refused rendering (live controls) would have drawn it live again
// (PostgreSQL chaos runs saw it: the Slack adapter waited out the 429 and
// sent the rendering it held, a second after the end was drawn).
func TestRateLimitedUpdateRendersTheRecordAsItStands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSurface()
		paused := &pausedSurface{surface: base}
		r := newReplicas(t, paused, base)
		r.surf = base
		r.run(0)
		r.run(1)
		ctx := context.Background()
		ask := r.create(0)
		r.other(0, ask, 0, "first") // rev 2: replica 0's update is refused
		synctest.Wait()
		if paused.refused.Load() != 1 || base.count(&base.updates, ask.ID) != 0 {
			t.Fatalf("refused %d, drawn %d: want the one update refused", paused.refused.Load(), base.count(&base.updates, ask.ID))
		}
		if _, err := r.svcs[1].Cancel(ctx, click(ask, bob)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		// Replica 0 is listed drawing the ask (it draws after its pause):
		// replica 1 leaves the record unsynced (drawers.go).
		if u, _ := base.lastUpdate(ask.ID); u.Status != interaction.StatusCancelled || r.get(ask.ID).Synced {
			t.Fatalf("replica 1 drew %s, synced %v; want the end, held unsynced", u.Status, r.get(ask.ID).Synced)
		}
		time.Sleep(2 * time.Second) // the pause ends
		synctest.Wait()
		if back := drawnBack(base, ask.ID); back != "" {
			t.Fatal(back)
		}
		if u, _ := base.lastUpdate(ask.ID); u.Status != interaction.StatusCancelled || !r.get(ask.ID).Synced {
			t.Fatalf("after the pause the message shows %s, synced %v", u.Status, r.get(ask.ID).Synced)
		}
		if n := base.count(&base.updates, ask.ID); n != 2 {
			t.Fatalf("%d updates, want 2 (the end, by each replica)", n)
		}
	})
}

// A refused update of a record nobody changed meanwhile is rendered after
// the pause, and the record is then in step.
func TestRateLimitedUpdateIsRenderedAfterThePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := newSurface()
		paused := &pausedSurface{surface: base}
		r := newReplicas(t, paused)
		r.surf = base
		r.run(0)
		ask := r.create(0)
		r.other(0, ask, 0, "first")
		synctest.Wait()
		if paused.refused.Load() != 1 || r.get(ask.ID).Synced {
			t.Fatalf("refused %d, synced %v", paused.refused.Load(), r.get(ask.ID).Synced)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		rec := r.get(ask.ID)
		if u, ok := base.lastUpdate(ask.ID); !ok || u.Rev != rec.Rev || u.Progress[0].Custom != "first" || !rec.Synced {
			t.Fatalf("after the pause: drawn %v rev %d of %d, synced %v", ok, u.Rev, rec.Rev, rec.Synced)
		}
		if n := base.count(&base.updates, ask.ID); n != 1 {
			t.Fatalf("%d updates drawn, want 1", n)
		}
	})
}

// A change marked while an update of the ask is in flight waits for it;
// when that update fails, the change is rendered as the record then
// stands, not as it was marked: meanwhile another replica ended the ask
// and drew it ended, and the marked record would draw it live again.
func TestWaitingMarkRendersTheRecordAsItStands(t *testing.T) {
	// Slack answers 5xx after a slow call.
	r, base, held := newHeldReplicas(t, 2, errors.New("chat.update: internal_error"))
	ctx := context.Background()
	ask := r.create(0)
	r.other(0, ask, 0, "first")
	<-held.entered               // rev 2 is on its way, slowly
	r.other(0, ask, 1, "second") // rev 3, marked on replica 0 while rev 2 is in flight
	if _, err := r.svcs[1].Cancel(ctx, click(ask, bob)); err != nil {
		t.Fatal(err)
	}
	// Replica 1 draws the end and leaves the record unsynced: replica 0
	// is listed drawing it, its update in flight (drawers.go).
	waitFor(t, "replica 1 drew the end and checked it", func() bool {
		u, ok := base.lastUpdate(ask.ID)
		rec := r.get(ask.ID)
		return ok && u.Status == interaction.StatusCancelled && !drawing(rec, r.svcs[1]) && !rec.Synced
	})
	close(held.release) // rev 2's update fails
	r.svcs[0].syncer.waitIdle(ctx)
	if back := drawnBack(base, ask.ID); back != "" {
		t.Fatal(back)
	}
	if u, _ := base.lastUpdate(ask.ID); u.Status != interaction.StatusCancelled || !r.get(ask.ID).Synced {
		t.Fatalf("the message shows %s, synced %v", u.Status, r.get(ask.ID).Synced)
	}
}

// twiceStore runs each Update's fn first on a copy of stale (when set),
// discarding what it did, then as its store does: a PostgreSQL Store tries
// fn on the record as it last wrote it and, when the row moved on, calls
// fn again on a fresh copy (store.Store.Update: fn may run twice).
type twiceStore struct {
	store.Store
	stale atomic.Pointer[Record]
}

func (s *twiceStore) Update(ctx context.Context, id string, fn func(*Record) error) (Record, error) {
	if st := s.stale.Load(); st != nil && st.ID == id {
		c := store.Clone(*st)
		_ = fn(&c)
	}
	return s.Store.Update(ctx, id, fn)
}

// A stale click's resync marks what the last run of its compare-and-set
// saw: a first run on an older copy (unsynced there) leaves nothing behind
// when the fresh run finds the record moved on, so no older revision is
// drawn over the newer one that another replica drew.
func TestStaleClickResyncUsesTheLastRun(t *testing.T) {
	st, surf := memory.New(), newSurface()
	twice := &twiceStore{Store: st}
	var svcs []*Service
	for _, s := range []store.Store{twice, st} {
		svcs = append(svcs, startRecovered(t, Config{Store: s, Surface: surf, DefaultChannel: chanID, Logger: zerolog.Nop()}))
	}
	ctx := context.Background()
	ask, err := svcs[1].Create(ctx, interaction.AskInput{Request: twoQuestions()})
	if err != nil {
		t.Fatal(err)
	}
	seen, err := svcs[1].Other(ctx, click(ask, alice), 0, "first") // rev 2
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svcs[1].Other(ctx, click(ask, alice), 1, "second"); err != nil { // rev 3
		t.Fatal(err)
	}
	waitFor(t, "rev 3 drawn", func() bool {
		u, ok := surf.lastUpdate(ask.ID)
		rec, _ := st.Get(ctx, ask.ID)
		return ok && u.Rev == 3 && rec.Synced
	})
	stale := store.Clone(seen)
	stale.Synced = false
	twice.stale.Store(&stale)
	seen.Synced = true
	svcs[0].resyncStale(click(ask, bob), &seen) // bob clicked rev 1 on replica 0, whose act saw rev 2
	svcs[0].bg.Wait()
	svcs[0].syncer.waitIdle(ctx)
	if back := drawnBack(surf, ask.ID); back != "" {
		t.Fatal(back)
	}
}
