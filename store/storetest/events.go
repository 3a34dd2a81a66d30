package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// mustEvents returns the events of ask id.
func mustEvents(t *testing.T, s store.Store, id string) []store.Event {
	t.Helper()
	evs, err := s.Events(t.Context(), id)
	if err != nil {
		t.Fatalf("Events(%s): %v", id, err)
	}
	return evs
}

// mustFeed returns the whole feed after seq after, read in pages of page.
func mustFeed(t *testing.T, s store.Store, after int64, page int) []store.Event {
	t.Helper()
	var out []store.Event
	for {
		evs, err := s.Feed(t.Context(), after, page)
		if err != nil {
			t.Fatalf("Feed(%d, %d): %v", after, page, err)
		}
		if len(evs) == 0 {
			return out
		}
		out = append(out, evs...)
		after = evs[len(evs)-1].Seq
	}
}

// kinds returns the kinds of evs.
func kinds(evs []store.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

// checkIncreasing fails unless the seqs of evs strictly increase.
func checkIncreasing(t *testing.T, what string, evs []store.Event) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		if evs[i].Seq <= evs[i-1].Seq {
			t.Fatalf("%s: seq %d after %d, want increasing", what, evs[i].Seq, evs[i-1].Seq)
		}
	}
}

func testEventsInOrder(t *testing.T, s store.Store) {
	ctx := t.Context()
	alice := &interaction.User{ID: "U1", Name: "alice"}
	r := pendingAt("a", base)
	r.Emit(store.EventCreated, nil, nil)
	if rec := mustCreate(t, s, r); rec.NewEvents != nil {
		t.Errorf("Create returned NewEvents %v, want none", rec.NewEvents)
	}
	// An idempotent create retried writes no event; neither does a
	// create refused for a taken id.
	keyed := pendingAt("k", base)
	keyed.IdempotencyKey = "key-k"
	keyed.Emit(store.EventCreated, nil, nil)
	mustCreate(t, s, keyed)
	again := pendingAt("k2", base)
	again.IdempotencyKey = "key-k"
	again.Emit(store.EventCreated, nil, nil)
	if _, created, err := s.Create(ctx, again); err != nil || created {
		t.Fatalf("Create with a used key: created=%v err=%v", created, err)
	}
	dup := pendingAt("a", base)
	dup.Emit(store.EventCreated, nil, nil)
	if _, _, err := s.Create(ctx, dup); !errors.Is(err, store.ErrExists) {
		t.Fatalf("Create of a taken id: %v, want ErrExists", err)
	}

	rec, err := s.Update(ctx, "a", func(r *store.Record) error {
		r.Rev++
		r.Emit(store.EventPosted, nil, map[string]string{"channel": "C1", "ts": "1.000100"})
		r.Emit(store.EventPosted, nil, json.RawMessage(`{"ts":"1.000200","channel":"D2"}`))
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if rec.NewEvents != nil {
		t.Errorf("Update returned NewEvents %v, want none", rec.NewEvents)
	}
	// An update whose fn fails writes none of its events.
	errNo := errors.New("no")
	if _, err := s.Update(ctx, "a", func(r *store.Record) error {
		r.Emit(store.EventReminded, nil, nil)
		return errNo
	}); !errors.Is(err, errNo) {
		t.Fatalf("Update with a failing fn: %v", err)
	}
	// Nor does one whose data does not encode: the write fails, INTERNAL.
	_, err = s.Update(ctx, "a", func(r *store.Record) error {
		r.Rev = 99
		r.Emit(store.EventResponse, alice, map[string]any{"bad": make(chan int)})
		return nil
	})
	if !errors.Is(err, &interaction.Error{Code: interaction.Internal}) {
		t.Fatalf("Update with data that does not encode: %v, want INTERNAL", err)
	}
	if got := mustGet(t, s, "a"); got.Rev != 1 {
		t.Errorf("the refused update was written: rev %d", got.Rev)
	}
	at := base.Add(time.Minute + 7)
	if _, err := s.Update(ctx, "a", func(r *store.Record) error {
		r.Emit(store.EventResponse, alice, map[string]any{"user": alice, "answer": map[string]any{"answers": []any{}}})
		r.NewEvents[len(r.NewEvents)-1].At = at
		r.Emit(store.EventEnded, alice, map[string]any{"status": "answered", "by": alice})
		return nil
	}); err != nil {
		t.Fatalf("Update: %v", err)
	}

	evs := mustEvents(t, s, "a")
	if got, want := kinds(evs), []string{"created", "posted", "posted", "response", "ended"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Events(a) kinds = %v, want %v", got, want)
	}
	checkIncreasing(t, "Events(a)", evs)
	for _, e := range evs {
		if e.AskID != "a" || e.At.IsZero() {
			t.Errorf("event %d: ask %q at %v, want ask a and a time", e.Seq, e.AskID, e.At)
		}
	}
	if string(evs[2].Data) != `{"ts":"1.000200","channel":"D2"}` {
		t.Errorf("posted data = %s, want the raw JSON as given", evs[2].Data)
	}
	if string(evs[1].Data) != `{"channel":"C1","ts":"1.000100"}` {
		t.Errorf("posted data = %s", evs[1].Data)
	}
	if evs[0].By != nil || evs[0].Data != nil {
		t.Errorf("created: by %v data %s, want neither", evs[0].By, evs[0].Data)
	}
	if evs[3].By == nil || *evs[3].By != *alice {
		t.Errorf("response by %v, want %v", evs[3].By, alice)
	}
	if !evs[3].At.Equal(at) {
		t.Errorf("response at %v, want %v (to the nanosecond)", evs[3].At, at)
	}
	if k := mustEvents(t, s, "k"); len(k) != 1 {
		t.Errorf("Events(k) = %v, want the one created", kinds(k))
	}
	if none := mustEvents(t, s, "unknown"); len(none) != 0 {
		t.Errorf("Events(unknown) = %v, want none", none)
	}
	// Returned events are copies.
	evs[1].Data[0] = 'X'
	evs[3].By.ID = "changed"
	if again := mustEvents(t, s, "a"); again[1].Data[0] != '{' || again[3].By.ID != "U1" {
		t.Errorf("changing returned events changed the store")
	}

	// A batch (store.Batcher) writes each op's events with it, and only
	// the ops that succeed.
	b, ok := s.(store.Batcher)
	if !ok {
		return
	}
	ops := []*store.UpdateOp{
		{Ctx: ctx, ID: "k", Fn: func(r *store.Record) error { r.Emit(store.EventReminded, nil, nil); return nil }},
		{Ctx: ctx, ID: "k", Fn: func(r *store.Record) error { r.Emit(store.EventNotified, nil, nil); return errNo }},
		{Ctx: ctx, ID: "nope", Fn: func(r *store.Record) error { r.Emit(store.EventNotified, nil, nil); return nil }},
		{Ctx: ctx, ID: "k", Fn: func(r *store.Record) error { r.Emit(store.EventEnded, nil, nil); return nil }},
	}
	b.UpdateBatch(ops)
	if ops[0].Err != nil || ops[3].Err != nil || !errors.Is(ops[1].Err, errNo) || !errors.Is(ops[2].Err, store.ErrNotFound) {
		t.Fatalf("UpdateBatch errors: %v %v %v %v", ops[0].Err, ops[1].Err, ops[2].Err, ops[3].Err)
	}
	if got, want := kinds(mustEvents(t, s, "k")), []string{"created", "reminded", "ended"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after UpdateBatch, Events(k) kinds = %v, want %v", got, want)
	}
}

func testEventsFeed(t *testing.T, s store.Store) {
	ctx := t.Context()
	if evs, err := s.Feed(ctx, 0, 10); err != nil || len(evs) != 0 {
		t.Fatalf("Feed of an empty store = %v, %v; want none", evs, err)
	}
	// Three asks whose events interleave.
	for _, id := range []string{"a", "b", "c"} {
		r := pendingAt(id, base)
		r.Emit(store.EventCreated, nil, nil)
		mustCreate(t, s, r)
	}
	for i := range 3 {
		for _, id := range []string{"c", "a", "b"} {
			if _, err := s.Update(ctx, id, func(r *store.Record) error {
				r.Emit(store.EventReminded, nil, map[string]int{"n": i})
				return nil
			}); err != nil {
				t.Fatalf("Update: %v", err)
			}
		}
	}
	all := mustFeed(t, s, 0, 1000)
	if len(all) != 12 {
		t.Fatalf("Feed has %d events, want 12", len(all))
	}
	checkIncreasing(t, "Feed", all)
	if got := []string{all[3].AskID, all[4].AskID, all[5].AskID}; !reflect.DeepEqual(got, []string{"c", "a", "b"}) {
		t.Errorf("Feed is not in commit order: %v", got)
	}
	// Resumed after any event, in pages of any size, it gives the rest.
	for _, page := range []int{1, 5, 0} {
		for i := range all {
			rest := mustFeed(t, s, all[i].Seq, page)
			if len(rest) != len(all)-i-1 || (len(rest) > 0 && rest[0].Seq != all[i+1].Seq) {
				t.Fatalf("Feed after %d (page %d): %d events, want %d", all[i].Seq, page, len(rest), len(all)-i-1)
			}
		}
	}
	if evs, err := s.Feed(ctx, all[0].Seq, 4); err != nil || len(evs) != 4 || evs[0].Seq != all[1].Seq {
		t.Errorf("Feed(after first, 4) = %d events, %v; want 4 from the second", len(evs), err)
	}
	if evs, err := s.Feed(ctx, all[len(all)-1].Seq, 10); err != nil || len(evs) != 0 {
		t.Errorf("Feed after the last = %v, %v; want none", evs, err)
	}
	if evs, err := s.Feed(ctx, -5, 100); err != nil || len(evs) != len(all) {
		t.Errorf("Feed after -5 = %d events, %v; want all", len(evs), err)
	}
	// The limit is bounded: FeedMax at most, FeedDefault when not given.
	for i := range store.FeedMax + 10 {
		if _, err := s.Update(ctx, "a", func(r *store.Record) error {
			r.Emit(store.EventNotified, nil, map[string]int{"i": i})
			return nil
		}); err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	for limit, want := range map[int]int{0: store.FeedDefault, -1: store.FeedDefault, store.FeedMax + 5: store.FeedMax, 7: 7} {
		if evs, err := s.Feed(ctx, 0, limit); err != nil || len(evs) != want {
			t.Errorf("Feed(0, %d) = %d events, %v; want %d", limit, len(evs), err, want)
		}
	}
}

func testEventsGoWithAsk(t *testing.T, s store.Store) {
	ctx := t.Context()
	mk := func(r store.Record) {
		r.Emit(store.EventCreated, nil, nil)
		r.Emit(store.EventEnded, nil, nil)
		mustCreate(t, s, r)
	}
	mk(endedAt("old", interaction.StatusAnswered, base, base.Add(time.Minute)))
	mk(pendingAt("live", base))
	mk(pendingAt("del", base))
	mk(endedAt("newest", interaction.StatusCancelled, base, base.Add(2*time.Minute)))
	before := mustFeed(t, s, 0, 100)
	if err := s.Delete(ctx, "del"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n, err := s.Prune(ctx, base.Add(time.Hour)); err != nil || n != 2 {
		t.Fatalf("Prune = %d, %v; want 2", n, err)
	}
	for _, id := range []string{"old", "del", "newest"} {
		if evs := mustEvents(t, s, id); len(evs) != 0 {
			t.Errorf("Events(%s) after its ask went = %v, want none", id, kinds(evs))
		}
	}
	left := mustFeed(t, s, 0, 100)
	if len(left) != 2 || left[0].AskID != "live" || left[1].AskID != "live" {
		t.Fatalf("Feed after Delete and Prune = %+v, want live's two events", left)
	}
	// The newest events were pruned: their seqs are not given out again.
	r := pendingAt("next", base)
	r.Emit(store.EventCreated, nil, nil)
	mustCreate(t, s, r)
	evs := mustEvents(t, s, "next")
	if len(evs) != 1 || evs[0].Seq <= before[len(before)-1].Seq {
		t.Errorf("an event after pruning got seq %v, want above %d", evs, before[len(before)-1].Seq)
	}
}

// checkFeedConcurrent has writers create and update asks through stores
// (several handles on one database where it can be shared) while a reader
// follows the feed, resuming after the last seq it got; at the end the
// reader has seen every event, each once, in order. An event that commits
// after a later seq was served would be missed here.
func checkFeedConcurrent(t *testing.T, stores []store.Store) {
	ctx := t.Context()
	const writers, asks, updates = 8, 6, 4
	var (
		done    atomic.Bool
		seen    []store.Event
		readErr error
		wg      sync.WaitGroup
	)
	wg.Go(func() {
		var after int64
		for {
			finished := done.Load() // read before the feed: a last pass after the writers
			evs, err := stores[len(stores)-1].Feed(ctx, after, 7)
			if err != nil {
				readErr = err
				return
			}
			seen = append(seen, evs...)
			if len(evs) > 0 {
				after = evs[len(evs)-1].Seq
			} else if finished {
				return
			}
		}
	})
	parallel(writers, func(w int) {
		s := stores[w%len(stores)]
		for a := range asks {
			id := fmt.Sprintf("w%d-a%d", w, a)
			r := pendingAt(id, base)
			r.Emit(store.EventCreated, nil, nil)
			if _, _, err := s.Create(ctx, r); err != nil {
				t.Errorf("Create %s: %v", id, err)
				return
			}
			for u := range updates {
				if _, err := s.Update(ctx, id, func(r *store.Record) error {
					r.Emit(store.EventNotified, nil, map[string]int{"u": u})
					if u == updates-1 {
						r.Emit(store.EventEnded, nil, nil)
					}
					return nil
				}); err != nil {
					t.Errorf("Update %s: %v", id, err)
					return
				}
			}
		}
	})
	done.Store(true)
	wg.Wait()
	if readErr != nil {
		t.Fatalf("Feed: %v", readErr)
	}
	want := writers * asks * (2 + updates)
	all := mustFeed(t, stores[0], 0, 1000)
	if len(all) != want {
		t.Fatalf("the feed holds %d events, want %d", len(all), want)
	}
	checkIncreasing(t, "the follower's feed", seen)
	if len(seen) != len(all) {
		missed := map[int64]bool{}
		for _, e := range all {
			missed[e.Seq] = true
		}
		for _, e := range seen {
			delete(missed, e.Seq)
		}
		t.Fatalf("a follower resuming after the last seq it got saw %d of %d events; missed seqs %v", len(seen), len(all), missed)
	}
	// Each ask's events are in the order they were emitted.
	for w := range writers {
		for a := range asks {
			id := fmt.Sprintf("w%d-a%d", w, a)
			evs := mustEvents(t, stores[0], id)
			if len(evs) != 2+updates || evs[0].Kind != store.EventCreated || evs[len(evs)-1].Kind != store.EventEnded {
				t.Fatalf("Events(%s) = %v", id, kinds(evs))
			}
			for u := range updates {
				if string(evs[1+u].Data) != fmt.Sprintf(`{"u":%d}`, u) {
					t.Errorf("Events(%s)[%d] data %s, want u %d", id, 1+u, evs[1+u].Data, u)
				}
			}
		}
	}
}

func testEventsFeedConcurrent(t *testing.T, s store.Store) {
	checkFeedConcurrent(t, []store.Store{s})
}

func testSharedEventsFeed(t *testing.T, a, b store.Store) {
	checkFeedConcurrent(t, []store.Store{a, b})
}
