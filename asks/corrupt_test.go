package asks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/syncbuf"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
)

// corruptRows is a store some of whose rows (marked by id) do not decode,
// as the SQL stores treat such rows: Get and Update of one fail INTERNAL
// (store.ErrCorrupt), and reads of many return the rest beside a
// *store.CorruptError.
type corruptRows struct {
	store.Store
	mu  sync.Mutex
	ids map[string]bool // guarded by mu
}

func (s *corruptRows) mark(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids == nil {
		s.ids = map[string]bool{}
	}
	s.ids[id] = true
}

func (s *corruptRows) corrupt(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[id]
}

func (s *corruptRows) errFor(op, id string) error {
	return store.WrapErr(context.Background(), op, store.Internal(store.ErrCorrupt, "corrupt record %q", id))
}

// many leaves the marked rows out of recs, naming them.
func (s *corruptRows) many(op string, recs []store.Record, err error) ([]store.Record, error) {
	if err != nil {
		return nil, err
	}
	var ce *store.CorruptError
	recs = slices.DeleteFunc(recs, func(r store.Record) bool {
		if s.corrupt(r.ID) {
			store.Corrupt(&ce, r.ID, s.errFor("decode", r.ID))
			return true
		}
		return false
	})
	if ce != nil {
		return recs, store.WrapErr(context.Background(), op, ce)
	}
	return recs, nil
}

func (s *corruptRows) Get(ctx context.Context, id string) (store.Record, error) {
	if s.corrupt(id) {
		return store.Record{}, s.errFor("get", id)
	}
	return s.Store.Get(ctx, id)
}

func (s *corruptRows) Update(ctx context.Context, id string, fn func(*store.Record) error) (store.Record, error) {
	if s.corrupt(id) {
		return store.Record{}, s.errFor("update", id)
	}
	return s.Store.Update(ctx, id, fn)
}

func (s *corruptRows) List(ctx context.Context, f store.Filter) ([]store.Record, error) {
	recs, err := s.Store.List(ctx, f)
	return s.many("list", recs, err)
}

func (s *corruptRows) Pending(ctx context.Context) ([]store.Record, error) {
	recs, err := s.Store.Pending(ctx)
	return s.many("pending", recs, err)
}

func (s *corruptRows) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Record, error) {
	recs, err := s.Store.ClaimDue(ctx, now, lease, limit)
	return s.many("claim due", recs, err)
}

// A corrupt record costs only itself: recovery, deadlines, listings and
// inboxes go on with the others, and the log names it.
func TestCorruptRecordCostsOnlyItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &corruptRows{Store: memory.New()}
		ctx := context.Background()
		// Left by an earlier process: its last change never reached the
		// message; and a record that no longer decodes.
		if _, _, err := st.Create(ctx, Record{Ask: interaction.Ask{ID: "abroken", Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
			t.Fatal(err)
		}
		st.mark("abroken")
		rec := Record{Ask: interaction.Ask{ID: "aunsynced", Status: interaction.StatusPending, Questions: twoQuestions().Questions,
			Channel: chanID, TS: "1690000000.000001", CreatedAt: time.Now().Add(-time.Hour)}, Rev: 2, Progress: make([]interaction.Progress, 2)}
		if _, _, err := st.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		surf := newSurface()
		var logs syncbuf.Buffer
		svc := startRecovered(t, Config{Store: st, Surface: surf, DefaultChannel: chanID, Logger: zerolog.New(&logs)})
		synctest.Wait()
		if u, ok := surf.lastUpdate("aunsynced"); !ok || u.Rev != 2 {
			t.Errorf("recovery did not bring the message in step: %+v, %v", u, ok)
		}
		ask, err := svc.Create(ctx, interaction.AskInput{Request: twoQuestions(), Timeout: interaction.Duration(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		if a, err := svc.Get(ctx, ask.ID); err != nil || a.Status != interaction.StatusExpired {
			t.Errorf("after its deadline: %s, %v; want expired", a.Status, err)
		}
		if asks, err := svc.List(ctx, interaction.ListFilter{}); err != nil || len(asks) != 2 {
			t.Errorf("List: %d asks, %v; want the two that decode", len(asks), err)
		}
		if pending, recent, err := svc.InboxRecords(ctx); err != nil || len(pending) != 1 || len(recent) != 2 {
			t.Errorf("InboxRecords: %d pending, %d recent, %v; want 1 and 2", len(pending), len(recent), err)
		}
		if l := logs.String(); !strings.Contains(l, "corrupt records left out") || !strings.Contains(l, `"asks":["abroken"]`) {
			t.Errorf("the log does not name the corrupt record:\n%s", l)
		}
		if n := svc.Counters().CorruptLeftOut; n < 4 {
			t.Errorf("CorruptLeftOut = %d, want one for each read that left it out (recovery, List, the inbox's two)", n)
		}
	})
}

// A corrupt record at the head of a post queue, which nobody can post or
// take out of the queue, does not hold up the asks behind it.
func TestCorruptQueueHeadIsSteppedOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &corruptRows{Store: memory.New()}
		base := newSurface()
		var logs syncbuf.Buffer
		svc := startRecovered(t, Config{Store: st, Surface: newLimited(base), DefaultChannel: chanID, Logger: zerolog.New(&logs)})
		var created []interaction.Ask
		for range 3 {
			ask, err := svc.Create(context.Background(), interaction.AskInput{Request: twoQuestions()})
			if err != nil {
				t.Fatal(err)
			}
			created = append(created, ask)
			time.Sleep(time.Millisecond)
		}
		if created[1].Posting != interaction.PostingQueued {
			t.Fatalf("second ask: posting %q, want queued", created[1].Posting)
		}
		st.mark(created[1].ID)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got, want := base.posted(), []string{created[0].ID, created[2].ID}; !slices.Equal(got, want) {
			t.Errorf("posted %v, want %v: the ask behind the corrupt one posted", got, want)
		}
		if !strings.Contains(logs.String(), "a corrupt record is stepped over") {
			t.Errorf("the log does not say so:\n%s", logs.String())
		}
	})
}

// Recovery pages through the ended asks whose message is behind, a
// thousand at a time: a page that is short only for rows that do not
// decode is not taken for the last.
func TestRecoveryPagesPastCorruptRows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &corruptRows{Store: memory.New()}
		ctx := context.Background()
		start := time.Now().Add(-time.Hour)
		ended := start.Add(time.Hour)
		const n = 1001
		id := func(i int) string { return fmt.Sprintf("a%04d", i) }
		for i := range n {
			rec := Record{Ask: interaction.Ask{ID: id(i), Status: interaction.StatusCancelled, Questions: twoQuestions().Questions,
				Channel: chanID, TS: fmt.Sprintf("1690000000.%06d", i), CreatedAt: start.Add(time.Duration(i) * time.Second),
				EndedAt: &ended}, Rev: 1}
			if _, _, err := st.Create(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
		st.mark(id(n - 1)) // the newest: on the first page
		surf := newSurface()
		startRecovered(t, Config{Store: st, Surface: surf, DefaultChannel: chanID, Logger: zerolog.Nop()})
		synctest.Wait()
		if _, ok := surf.lastUpdate(id(0)); !ok {
			t.Errorf("the oldest ask, on the second page, was not brought in step")
		}
		if _, ok := surf.lastUpdate(id(1)); !ok {
			t.Errorf("an ask of the first page was not brought in step")
		}
	})
}
