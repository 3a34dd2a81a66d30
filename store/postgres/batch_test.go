package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/postgres/pgtest"
)

func createPending(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		r := store.Record{Ask: interaction.Ask{ID: id, Status: interaction.StatusPending, CreatedAt: time.Now()}}
		r.Emit(store.EventCreated, nil, nil)
		if _, _, err := s.Create(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
}

func eventKinds(t *testing.T, s *Store, id string) []string {
	t.Helper()
	evs, err := s.Events(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// bumpEmitting returns an op's fn that bumps Rev and emits kind.
func bumpEmitting(kind string) func(*store.Record) error {
	return func(r *store.Record) error {
		r.Rev++
		r.Emit(kind, nil, nil)
		return nil
	}
}

// A batch of records this Store wrote last is one transaction in one
// round trip: each op gets Update's result (an op sees the ops before it;
// an fn's error or a done context skips only that op), and only the ops
// written have their events, numbered in order.
func TestUpdateBatchCachedIsOneRoundTrip(t *testing.T) {
	s := openURL(t, pgtest.URL(t))
	ctx := t.Context()
	createPending(t, s, "a", "b", "c")
	errFn := errors.New("fn refused")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	ops := []*store.UpdateOp{
		{Ctx: ctx, ID: "b", Fn: bumpEmitting(store.EventReminded)},
		{Ctx: ctx, ID: "a", Fn: bumpEmitting(store.EventReminded)},
		{Ctx: ctx, ID: "a", Fn: func(*store.Record) error { return errFn }},
		{Ctx: ctx, ID: "a", Fn: bumpEmitting(store.EventNotified)},
		{Ctx: cancelled, ID: "c", Fn: bumpEmitting(store.EventNotified)},
	}
	trips := s.RoundTrips()
	s.UpdateBatch(ops)
	if n := s.RoundTrips() - trips; n != 1 {
		t.Errorf("%d round trips for a batch of cached records, want 1", n)
	}
	for i, want := range []error{nil, nil, errFn, nil, context.Canceled} {
		if !errors.Is(ops[i].Err, want) {
			t.Errorf("op %d: %v, want %v", i, ops[i].Err, want)
		}
	}
	if ops[1].Rec.Rev != 1 || ops[3].Rec.Rev != 2 || ops[3].Rec.Version != 3 || ops[0].Rec.Version != 2 {
		t.Fatalf("results: a Rev %d then %d (version %d), b version %d; want 1, 2 (3), 2",
			ops[1].Rec.Rev, ops[3].Rec.Rev, ops[3].Rec.Version, ops[0].Rec.Version)
	}
	if got, want := eventKinds(t, s, "a"), []string{"created", "reminded", "notified"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events of a %v, want %v", got, want)
	}
	if got, want := eventKinds(t, s, "c"), []string{"created"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events of c %v, want %v", got, want)
	}
	// The feed numbers them in op order after sorting by id: a's two, then b's.
	feed, err := s.Feed(ctx, 3, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range feed {
		got = append(got, e.AskID+":"+e.Kind)
	}
	if want := []string{"a:reminded", "a:notified", "b:reminded"}; !reflect.DeepEqual(got, want) {
		t.Errorf("feed after the batch %v, want %v", got, want)
	}
	// An fn refusing a cached copy that no op of the batch checked against
	// the row (nothing of its record written): its verdict is not trusted,
	// and it runs again on the row, read under lock.
	refusals := 0
	ops = []*store.UpdateOp{
		{Ctx: ctx, ID: "b", Fn: bumpEmitting(store.EventReminded)},
		{Ctx: ctx, ID: "c", Fn: func(*store.Record) error { refusals++; return errFn }},
	}
	trips = s.RoundTrips()
	s.UpdateBatch(ops)
	if ops[0].Err != nil || !errors.Is(ops[1].Err, errFn) || refusals != 2 {
		t.Errorf("ops %v, %v; the refusing fn ran %d times, want nil, errFn, 2", ops[0].Err, ops[1].Err, refusals)
	}
	if n := s.RoundTrips() - trips; n != 3 {
		t.Errorf("%d round trips, want 3 (the batch, then the refusal's locked read and rollback)", n)
	}
	// The records as the batch left them are cached: the next Update is
	// one round trip again.
	trips = s.RoundTrips()
	if r, err := s.Update(ctx, "a", bumpEmitting(store.EventReminded)); err != nil || r.Version != 4 {
		t.Fatalf("Update after the batch: version %d, %v", r.Version, err)
	}
	if n := s.RoundTrips() - trips; n != 1 {
		t.Errorf("Update after the batch took %d round trips, want 1", n)
	}
	// A batch of cached records whose fns all refuse writes nothing and
	// sends nothing: the ops run again together under lock (one read, and
	// the COMMIT of a transaction that wrote nothing).
	refusals = 0
	ops = []*store.UpdateOp{
		{Ctx: ctx, ID: "a", Fn: func(*store.Record) error { refusals++; return errFn }},
		{Ctx: ctx, ID: "b", Fn: func(*store.Record) error { refusals++; return errFn }},
	}
	trips = s.RoundTrips()
	s.UpdateBatch(ops)
	if !errors.Is(ops[0].Err, errFn) || !errors.Is(ops[1].Err, errFn) || refusals != 4 {
		t.Errorf("ops %v, %v; the refusing fns ran %d times, want errFn twice, 4", ops[0].Err, ops[1].Err, refusals)
	}
	if n := s.RoundTrips() - trips; n != 2 {
		t.Errorf("%d round trips, want 2 (no batch; the refusals' locked read and its end)", n)
	}
}

// A record another Store wrote since: its compare-and-set misses, the
// others of the batch are written, and its ops run again on the row as it
// is (their fns twice), their events written once.
func TestUpdateBatchRecordMovedOnRunsAgain(t *testing.T) {
	u := pgtest.URL(t)
	s, other := openURL(t, u), openURL(t, u)
	ctx := t.Context()
	createPending(t, s, "a", "b")
	old, oldXmin, ok := s.records.Get("b")
	if !ok {
		t.Fatal("b not cached after its Create")
	}
	if _, err := other.Update(ctx, "b", func(r *store.Record) error { r.Rev = 10; return nil }); err != nil {
		t.Fatal(err)
	}
	// s hears of the newer version and drops its copy; put the old one
	// back, as if the notification were still on its way.
	for _, _, ok := s.records.Get("b"); ok; _, _, ok = s.records.Get("b") {
		select {
		case <-ctx.Done():
			t.Fatal("s never heard of b's newer version")
		case <-time.After(time.Millisecond):
		}
	}
	s.records.Put(old, oldXmin)
	var mu sync.Mutex
	saw := map[string][]int{}
	record := func(id string) func(*store.Record) error {
		return func(r *store.Record) error {
			mu.Lock()
			saw[id] = append(saw[id], r.Rev)
			mu.Unlock()
			return bumpEmitting(store.EventReminded)(r)
		}
	}
	ops := []*store.UpdateOp{
		{Ctx: ctx, ID: "a", Fn: record("a")},
		{Ctx: ctx, ID: "b", Fn: record("b1")},
		{Ctx: ctx, ID: "b", Fn: record("b2")},
	}
	s.UpdateBatch(ops)
	for i, op := range ops {
		if op.Err != nil {
			t.Fatalf("op %d: %v", i, op.Err)
		}
	}
	if ops[1].Rec.Rev != 11 || ops[2].Rec.Rev != 12 || ops[2].Rec.Version != 4 {
		t.Fatalf("b after the batch: Rev %d then %d (version %d), want 11, 12 (4)", ops[1].Rec.Rev, ops[2].Rec.Rev, ops[2].Rec.Version)
	}
	if want := []int{0, 10}; !reflect.DeepEqual(saw["b1"], want) {
		t.Errorf("b's first fn saw Rev %v, want %v (the cached copy, then the row)", saw["b1"], want)
	}
	if want := []int{0}; !reflect.DeepEqual(saw["a"], want) {
		t.Errorf("a's fn saw Rev %v, want %v (once)", saw["a"], want)
	}
	if got, want := eventKinds(t, s, "b"), []string{"created", "reminded", "reminded"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events of b %v, want %v", got, want)
	}
	if got, want := eventKinds(t, s, "a"), []string{"created", "reminded"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events of a %v, want %v", got, want)
	}
}

// Records another Store wrote quietly (no notification: this Store keeps
// its copies): their compare-and-sets miss and return the rows as they
// stand, and their ops run again as one more batch over those, not one
// Update each: two round trips for the batch, whatever the number of
// such records.
func TestUpdateBatchStaleRecordsRunAgainTogether(t *testing.T) {
	s := staleCopies(t, "a", "b", "c")
	ctx := t.Context()
	createPending(t, s, "d")
	var ops []*store.UpdateOp
	for _, id := range []string{"d", "c", "b", "a", "a"} {
		ops = append(ops, &store.UpdateOp{Ctx: ctx, ID: id, Fn: bumpEmitting(store.EventReminded)})
	}
	trips := s.RoundTrips()
	s.UpdateBatch(ops)
	if n := s.RoundTrips() - trips; n != 2 {
		t.Errorf("%d round trips, want 2 (the batch, then the stale records' over the rows the misses returned)", n)
	}
	for i, op := range ops {
		if op.Err != nil {
			t.Fatalf("op %d (%s): %v", i, op.ID, op.Err)
		}
	}
	want := map[string][]int{"d": {1}, "c": {11}, "b": {11}, "a": {11, 12}}
	got := map[string][]int{}
	for _, op := range ops {
		got[op.ID] = append(got[op.ID], op.Rec.Rev)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Rev after each op %v, want %v (each over the other Store's write)", got, want)
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		r, err := s.Get(ctx, id)
		if err != nil || r.Rev != want[id][len(want[id])-1] {
			t.Errorf("%s stored with Rev %d, %v", id, r.Rev, err)
		}
	}
	if got, want := eventKinds(t, s, "a"), []string{"created", "reminded", "reminded"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events of a %v, want %v", got, want)
	}
}

// A batch with a record this Store has not cached reads them all under
// lock (two round trips); an unknown id is ErrNotFound, a corrupt row
// fails its own ops alone, and a write the database refuses fails the
// ops that were to be written, writing none.
func TestUpdateBatchUncached(t *testing.T) {
	u := pgtest.URL(t)
	s, other := openURL(t, u), openURL(t, u)
	ctx := t.Context()
	createPending(t, other, "a", "b", "bad", "refused")
	createPending(t, s, "c")
	errFn := errors.New("fn refused")
	ops := []*store.UpdateOp{
		{Ctx: ctx, ID: "c", Fn: bumpEmitting(store.EventReminded)},
		{Ctx: ctx, ID: "a", Fn: bumpEmitting(store.EventReminded)},
		{Ctx: ctx, ID: "nope", Fn: bumpEmitting(store.EventReminded)},
		{Ctx: ctx, ID: "b", Fn: func(*store.Record) error { return errFn }},
	}
	trips := s.RoundTrips()
	s.UpdateBatch(ops)
	if n := s.RoundTrips() - trips; n != 2 {
		t.Errorf("%d round trips, want 2 (the locked read, the write)", n)
	}
	for i, want := range []error{nil, nil, store.ErrNotFound, errFn} {
		if !errors.Is(ops[i].Err, want) {
			t.Errorf("op %d: %v, want %v", i, ops[i].Err, want)
		}
	}
	if ops[1].Rec.Version != 2 || ops[0].Rec.Version != 2 {
		t.Errorf("versions %d, %d; want 2, 2", ops[1].Rec.Version, ops[0].Rec.Version)
	}

	if _, err := s.pool.Exec(ctx, `UPDATE asks SET record = '{"id": "other"}' WHERE id = 'bad'`); err != nil {
		t.Fatal(err)
	}
	ops = []*store.UpdateOp{
		{Ctx: ctx, ID: "a", Fn: bumpEmitting(store.EventReminded)},
		{Ctx: ctx, ID: "bad", Fn: bumpEmitting(store.EventReminded)},
	}
	s.UpdateBatch(ops)
	if ops[0].Err != nil || interaction.ErrorCode(ops[1].Err) != interaction.Internal || !errors.Is(ops[1].Err, store.ErrCorrupt) {
		t.Errorf("a batch with a corrupt row: %v, %v; want a written, the corrupt one INTERNAL", ops[0].Err, ops[1].Err)
	}
	if got, want := eventKinds(t, s, "a"), []string{"created", "reminded", "reminded"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events of a %v, want %v", got, want)
	}

	if _, err := s.pool.Exec(ctx, `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'refused'; END$$;
		CREATE TRIGGER refuse BEFORE UPDATE ON asks FOR EACH ROW WHEN (OLD.id = 'refused') EXECUTE FUNCTION refuse()`); err != nil {
		t.Fatal(err)
	}
	s.records.Drop("a")
	ops = []*store.UpdateOp{
		{Ctx: ctx, ID: "a", Fn: bumpEmitting(store.EventReminded)},
		{Ctx: ctx, ID: "refused", Fn: bumpEmitting(store.EventReminded)},
	}
	s.UpdateBatch(ops)
	for i, op := range ops {
		if interaction.ErrorCode(op.Err) != interaction.Internal {
			t.Errorf("op %d with a refused write in the batch: %v, want INTERNAL", i, op.Err)
		}
	}
	if got, want := eventKinds(t, s, "a"), []string{"created", "reminded", "reminded"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events of a %v, want %v: a failed batch writes nothing", got, want)
	}
	// Nothing is left locked.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := other.Update(wctx, "a", bumpEmitting(store.EventReminded)); err != nil {
		t.Fatal(err)
	}
}

// An error of the database in the pipelined write (here an event whose
// data PostgreSQL refuses) rolls back every op of the batch.
func TestUpdateBatchDatabaseErrorWritesNothing(t *testing.T) {
	u := pgtest.URL(t)
	s, other := openURL(t, u), openURL(t, u)
	ctx := t.Context()
	createPending(t, s, "a", "b")
	ops := []*store.UpdateOp{
		{Ctx: ctx, ID: "a", Fn: bumpEmitting(store.EventReminded)},
		{Ctx: ctx, ID: "b", Fn: func(r *store.Record) error {
			r.Emit(store.EventReminded, nil, json.RawMessage(`{not json`))
			return nil
		}},
	}
	s.UpdateBatch(ops)
	for i, op := range ops {
		if op.Err == nil {
			t.Errorf("op %d succeeded in a batch the database refused", i)
		}
	}
	for _, id := range []string{"a", "b"} {
		r, err := other.Get(ctx, id)
		if err != nil || r.Version != 1 {
			t.Errorf("%s: version %d (%v), want 1: nothing written", id, r.Version, err)
		}
	}
	// Both are written by the next batch, with the row read again.
	ops[1].Fn = bumpEmitting(store.EventReminded)
	s.UpdateBatch(ops)
	for i, op := range ops {
		if op.Err != nil || op.Rec.Version != 2 {
			t.Errorf("op %d after the failed batch: version %d, %v", i, op.Rec.Version, op.Err)
		}
	}
}

// Batches of different Stores over the same records in opposite orders,
// with single Updates among them, never deadlock (rows are locked in id
// order, the event counter last) and lose no update.
func TestUpdateBatchesConcurrentNoDeadlock(t *testing.T) {
	u := pgtest.URL(t)
	s1, s2 := openURL(t, u), openURL(t, u)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	ids := []string{"a", "b", "c", "d"}
	createPending(t, s1, ids...)
	const rounds = 40
	var wg sync.WaitGroup
	errs := make(chan error, 4*rounds*len(ids))
	batch := func(s *Store, order []string) {
		defer wg.Done()
		for range rounds {
			ops := make([]*store.UpdateOp, len(order))
			for i, id := range order {
				ops[i] = &store.UpdateOp{Ctx: ctx, ID: id, Fn: bumpEmitting(store.EventReminded)}
			}
			s.UpdateBatch(ops)
			for _, op := range ops {
				if op.Err != nil {
					errs <- op.Err
				}
			}
		}
	}
	wg.Add(3)
	go batch(s1, ids)
	go batch(s2, []string{"d", "c", "b", "a"})
	go func() {
		defer wg.Done()
		for i := range rounds * len(ids) {
			if _, err := s2.Update(ctx, ids[i%len(ids)], bumpEmitting(store.EventReminded)); err != nil {
				errs <- err
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		r, err := s1.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := 3 * rounds; r.Rev != want || r.Version != int64(want+1) {
			t.Errorf("%s: Rev %d version %d, want %d and %d", id, r.Rev, r.Version, want, want+1)
		}
		if n := len(eventKinds(t, s1, id)); n != 3*rounds+1 {
			t.Errorf("%s: %d events, want %d", id, n, 3*rounds+1)
		}
	}
}
