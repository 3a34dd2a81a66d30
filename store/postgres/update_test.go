package postgres

import (
	"errors"
	"reflect"
	"testing"

	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/postgres/pgtest"
)

// staleCopies creates ids on a Store it returns, then has another Store
// write each quietly (Rev 10): the first keeps copies the rows moved on
// from, as a replica does after a click on another.
func staleCopies(t *testing.T, ids ...string) *Store {
	t.Helper()
	u := pgtest.URL(t)
	s, other := openURL(t, u), openURL(t, u)
	createPending(t, s, ids...)
	for _, id := range ids {
		if _, err := other.Update(t.Context(), id, func(r *store.Record) error { r.Rev = 10; r.Quiet = true; return nil }); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := s.records.Get(id); !ok {
			t.Fatalf("%s: s dropped its copy for a quiet write", id)
		}
	}
	return s
}

// A copy another Store made stale with a quiet write (no notification:
// this Store keeps it): the compare-and-set misses and returns the row as
// it stands, and fn runs again on that in one more statement: two round
// trips, no lock, the events written once. The next Update is one.
func TestUpdateStaleCopyTwoRoundTrips(t *testing.T) {
	s := staleCopies(t, "a")
	ctx := t.Context()
	var saw []int
	fn := func(r *store.Record) error {
		saw = append(saw, r.Rev)
		return bumpEmitting(store.EventReminded)(r)
	}
	trips := s.RoundTrips()
	got, err := s.Update(ctx, "a", fn)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.RoundTrips() - trips; n != 2 {
		t.Errorf("%d round trips, want 2 (the missed compare-and-set, then one over the row it returned)", n)
	}
	if want := []int{0, 10}; !reflect.DeepEqual(saw, want) {
		t.Errorf("fn saw Rev %v, want %v (the stale copy, then the row)", saw, want)
	}
	if got.Rev != 11 || got.Version != 3 {
		t.Errorf("Update gave Rev %d version %d, want 11 and 3", got.Rev, got.Version)
	}
	trips = s.RoundTrips()
	if got, err = s.Update(ctx, "a", fn); err != nil || got.Rev != 12 {
		t.Fatalf("second Update: Rev %d, %v", got.Rev, err)
	}
	if n := s.RoundTrips() - trips; n != 1 {
		t.Errorf("second Update: %d round trips, want 1", n)
	}
	if got, want := eventKinds(t, s, "a"), []string{"created", "reminded", "reminded"}; !reflect.DeepEqual(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// A record written elsewhere between each of Update's tries: after two
// copies (the cached one and the row the miss returned) it is read under
// lock, so a busy record costs a bounded number of statements.
func TestUpdateBusyRecordGoesLocked(t *testing.T) {
	u := pgtest.URL(t)
	s, other := openURL(t, u), openURL(t, u)
	ctx := t.Context()
	createPending(t, s, "a")
	var saw []int
	fn := func(r *store.Record) error {
		saw = append(saw, r.Rev)
		if len(saw) <= 2 { // the copies: another writer gets in first
			if _, err := other.Update(ctx, "a", func(r *store.Record) error { r.Rev += 10; r.Quiet = true; return nil }); err != nil {
				return err
			}
		}
		r.Rev++
		return nil
	}
	trips := s.RoundTrips()
	got, err := s.Update(ctx, "a", fn)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.RoundTrips() - trips; n != 4 {
		t.Errorf("%d round trips, want 4 (two missed compare-and-sets, then the locked read and the write)", n)
	}
	if want := []int{0, 10, 20}; !reflect.DeepEqual(saw, want) {
		t.Errorf("fn saw Rev %v, want %v", saw, want)
	}
	if got.Rev != 21 || got.Version != 4 {
		t.Errorf("Update gave Rev %d version %d, want 21 and 4", got.Rev, got.Version)
	}
	if r, err := s.Get(ctx, "a"); err != nil || r.Rev != 21 {
		t.Errorf("stored Rev %d, %v; want 21", r.Rev, err)
	}
}

var errRefused = errors.New("refused")

// A fn that refuses a copy returned by a miss is not trusted on it: the
// record is read under lock and fn decides on the row.
func TestUpdateRefusalOfFreshCopyGoesLocked(t *testing.T) {
	s := staleCopies(t, "a")
	ctx := t.Context()
	calls := 0
	got, err := s.Update(ctx, "a", func(r *store.Record) error {
		calls++
		if calls == 2 {
			return errRefused // the copy the miss returned
		}
		r.Rev++
		return nil
	})
	if err != nil || got.Rev != 11 || calls != 3 {
		t.Errorf("Update: Rev %d, %v after %d calls of fn; want 11, nil, 3", got.Rev, err, calls)
	}
}
