package postgres

import (
	"reflect"
	"testing"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/postgres/pgtest"
	"github.com/slackask/slackask/store/storetest"
)

// createAsked creates pending records of two questions on s.
func createAsked(t *testing.T, s *Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if _, _, err := s.Create(t.Context(), storetest.TwoQuestions(id)); err != nil {
			t.Fatal(err)
		}
	}
}

// pickOn is storetest.Pick of the labels, counting fn's runs in runs.
func pickOn(user string, q int, runs *int, labels ...string) func(*store.Record) error {
	pick := storetest.Pick(user, q, interaction.Progress{Selected: labels}, nil)
	return func(r *store.Record) error {
		*runs++
		return pick(r)
	}
}

func mustWrite(t *testing.T, s *Store, id string, fn func(*store.Record) error) (store.Record, int64) {
	t.Helper()
	trips := s.RoundTrips()
	r, err := s.Update(t.Context(), id, fn)
	if err != nil {
		t.Fatal(err)
	}
	return r, s.RoundTrips() - trips
}

// Two Stores picking on one record, each over a copy the other's picks
// made stale: every pick is one statement, fn runs once, and nothing is
// lost. A write of another kind after a merge over others' picks is two
// (the copy lacks them: the row comes back), one after a merge over
// nothing new.
func TestPickMergesOneRoundTrip(t *testing.T) {
	u := pgtest.URL(t)
	s, other := openURL(t, u), openURL(t, u)
	createAsked(t, s, "a")
	runs := 0
	if _, n := mustWrite(t, other, "a", pickOn("", 1, &runs, "Prod")); n != 2 {
		t.Fatalf("other's first touch: %d round trips, want 2 (read under lock, write)", n)
	}
	for i := range 10 {
		w := []*Store{s, other}[i%2]
		runs = 0
		got, n := mustWrite(t, w, "a", pickOn([]string{"", "U1"}[i/2%2], i%2, &runs, "Yes"))
		if n != 1 || runs != 1 || !got.Quiet {
			t.Fatalf("pick %d: %d round trips, %d runs of fn, quiet %v; want 1, 1, true", i, n, runs, got.Quiet)
		}
	}
	want := store.Record{Progress: []interaction.Progress{{Selected: []string{"Yes"}}, {Selected: []string{"Yes"}}},
		Drafts: map[string][]interaction.Progress{"U1": {{Selected: []string{"Yes"}}, {Selected: []string{"Yes"}}}}}
	got, err := other.Get(t.Context(), "a")
	if err != nil || got.Version != 12 || !reflect.DeepEqual(got.Progress, want.Progress) || !reflect.DeepEqual(got.Drafts, want.Drafts) {
		t.Fatalf("stored v%d progress %+v drafts %+v, %v; want v12, %+v, %+v", got.Version, got.Progress, got.Drafts, err, want.Progress, want.Drafts)
	}

	// s merged its last pick over other's: its copy lacks other's picks.
	var saw []store.Record
	redraw := func(r *store.Record) error { saw = append(saw, store.Clone(*r)); r.Rev++; return nil }
	if _, n := mustWrite(t, s, "a", redraw); n != 2 || len(saw) != 2 || !reflect.DeepEqual(saw[1].Drafts, want.Drafts) {
		t.Fatalf("a redraw after merging over other picks: %d round trips, %d runs; want 2, and the second on the row", n, len(saw))
	}
	// Over its own redraw and pick, nothing else since: one statement each.
	if _, n := mustWrite(t, s, "a", pickOn("U2", 0, &runs, "No")); n != 1 {
		t.Fatalf("a pick over the copy: %d round trips", n)
	}
	if r, n := mustWrite(t, s, "a", redraw); n != 1 || r.Rev != 2 || r.Drafts["U2"] == nil {
		t.Fatalf("a redraw after merging over nothing new: %d round trips, %+v", n, r)
	}
}

// A write of the row by a replica from before pick merges (it knows no
// loud_xmin: the trigger sets it), its notification not yet heard, is one
// a pick's fn sees: the merge misses and the row comes back. So is a quiet
// write of more than picks through another Store, never announced.
func TestPickAfterOtherKindOfWriteSeesIt(t *testing.T) {
	u := pgtest.URL(t)
	s, other := openURL(t, u), openURL(t, u)
	createAsked(t, s, "a")
	runs := 0
	mustWrite(t, s, "a", pickOn("", 0, &runs, "Yes")) // the last write quiet: quiet_at = version
	if _, err := s.pool.Exec(t.Context(), `ALTER TABLE asks DISABLE TRIGGER asks_notify_update`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(t.Context(), `UPDATE asks SET record = jsonb_set(record, '{rev}', '5'), version = version + 1 WHERE id = 'a'`); err != nil {
		t.Fatal(err)
	}
	var rev []int
	sawRev := func(r *store.Record) error { rev = append(rev, r.Rev); return pickOn("", 1, &runs, "Dev")(r) }
	got, n := mustWrite(t, s, "a", sawRev)
	if n != 2 || !reflect.DeepEqual(rev, []int{0, 5}) || got.Rev != 5 || got.Version != 4 {
		t.Fatalf("after an older replica's write: %d round trips, fn saw rev %v, wrote rev %d v%d; want 2, [0 5], 5, v4", n, rev, got.Rev, got.Version)
	}

	mustWrite(t, other, "a", func(r *store.Record) error {
		r.Rev = 6
		r.Progress[0].Selected = []string{"No"}
		r.Quiet = true
		return nil
	})
	rev = nil
	if got, n = mustWrite(t, s, "a", sawRev); n != 2 || !reflect.DeepEqual(rev, []int{5, 6}) || got.Rev != 6 || got.Progress[0].Selected[0] != "No" {
		t.Fatalf("after a quiet write of more than picks: %d round trips, fn saw rev %v, wrote %+v; want 2, [5 6]", n, rev, got)
	}
}

// A batch of picks on records whose copies other's picks made stale is
// one round trip; a write of another kind after a merge in the same batch
// waits for the batch and runs over the row.
func TestPickMergesInBatch(t *testing.T) {
	u := pgtest.URL(t)
	s, other := openURL(t, u), openURL(t, u)
	createAsked(t, s, "a", "b")
	runs := 0
	for _, id := range []string{"a", "b"} {
		mustWrite(t, other, id, pickOn("", 1, &runs, "Prod"))
	}
	ctx := t.Context()
	ops := []*store.UpdateOp{
		{Ctx: ctx, ID: "a", Fn: pickOn("", 0, &runs, "No")},
		{Ctx: ctx, ID: "b", Fn: pickOn("U1", 0, &runs, "No")},
		{Ctx: ctx, ID: "b", Fn: pickOn("U1", 1, &runs, "Dev")},
	}
	trips := s.RoundTrips()
	s.UpdateBatch(ops)
	if n := s.RoundTrips() - trips; n != 1 {
		t.Errorf("a batch of picks over stale copies: %d round trips, want 1", n)
	}
	for i, want := range []int64{3, 3, 4} { // a's first write, then b's two
		if op := ops[i]; op.Err != nil || op.Rec.Version != want {
			t.Errorf("op %d: v%d, %v; want v%d", i, op.Rec.Version, op.Err, want)
		}
	}

	mustWrite(t, other, "a", pickOn("U9", 1, &runs, "Dev"))
	var saw []store.Record
	ops = []*store.UpdateOp{
		{Ctx: ctx, ID: "a", Fn: pickOn("U2", 0, &runs, "Yes")},
		{Ctx: ctx, ID: "a", Fn: func(r *store.Record) error { saw = append(saw, store.Clone(*r)); r.Rev = 3; return nil }},
	}
	s.UpdateBatch(ops)
	if ops[0].Err != nil || ops[1].Err != nil || ops[1].Rec.Rev != 3 {
		t.Fatalf("ops: %+v %v; %+v %v", ops[0].Rec, ops[0].Err, ops[1].Rec, ops[1].Err)
	}
	if last := saw[len(saw)-1]; last.Drafts["U9"] == nil || last.Drafts["U2"] == nil {
		t.Fatalf("the write after the merge ran on drafts %+v, want U9's and U2's", last.Drafts)
	}
	got, err := other.Get(ctx, "a")
	if err != nil || got.Rev != 3 || got.Drafts["U9"] == nil || got.Drafts["U2"] == nil || got.Progress[0].Selected[0] != "No" || got.Progress[1].Selected[0] != "Prod" {
		t.Fatalf("stored %+v, %v", got, err)
	}
}

// pickOf tells a quiet write of one pick, or of none, from every other:
// that is all a merge may write.
func TestPickOf(t *testing.T) {
	base := store.Record{Ask: interaction.Ask{ID: "a", Status: interaction.StatusPending, Questions: []interaction.Question{{ID: "q1"}, {ID: "q2"}}},
		Progress: []interaction.Progress{{Selected: []string{"Yes"}}, {}},
		Drafts:   map[string][]interaction.Progress{"U1": {{}, {Custom: "x"}}}}
	tag := rowTag{xmin: "7", loud: "5"}
	runs := 0
	for _, tc := range []struct {
		name string
		tag  rowTag
		fn   func(*store.Record) error
		ok   bool
		user string
		q    int
		val  string
		all  string
	}{
		{"progress", tag, pickOn("", 1, &runs, "Dev"), true, "", 1, `{"selected":["Dev"]}`, `[{"selected":["Yes"]},{"selected":["Dev"]}]`},
		{"a draft", tag, pickOn("U1", 0, &runs, "No"), true, "U1", 0, `{"selected":["No"]}`, `[{"selected":["No"]},{"custom":"x"}]`},
		{"a new draft", tag, pickOn("U2", 1, &runs, "No"), true, "U2", 1, `{"selected":["No"]}`, `[{},{"selected":["No"]}]`},
		{"the same pick again", tag, pickOn("", 0, &runs, "Yes"), true, "", -1, "", ""},
		{"loud_xmin unknown", rowTag{xmin: "7"}, pickOn("", 1, &runs, "Dev"), false, "", 0, "", ""},
		{"not quiet", tag, func(r *store.Record) error { r.Progress[1].Selected = []string{"Dev"}; return nil }, false, "", 0, "", ""},
		{"quiet, more than picks", tag, func(r *store.Record) error { r.Rev++; return pickOn("", 1, &runs, "Dev")(r) }, false, "", 0, "", ""},
		{"two entries", tag, func(r *store.Record) error {
			r.Progress[0] = interaction.Progress{}
			return pickOn("", 1, &runs, "Dev")(r)
		}, false, "", 0, "", ""},
		{"a draft dropped", tag, func(r *store.Record) error { delete(r.Drafts, "U1"); r.Quiet = true; return nil }, false, "", 0, "", ""},
		{"an array not of the questions' length", tag, func(r *store.Record) error { r.Progress = r.Progress[:1]; r.Quiet = true; return nil }, false, "", 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := store.Clone(base)
			w, fnErr, err := applyFn(&b, store.Clone(base), tc.fn)
			if fnErr != nil || err != nil {
				t.Fatal(fnErr, err)
			}
			p, ok := pickOf(tc.tag, &b, w)
			if ok != tc.ok {
				t.Fatalf("pickOf = %+v, %v; want ok %v", p, ok, tc.ok)
			}
			if ok && (p.user != tc.user || p.q != tc.q || string(p.val) != tc.val || string(p.all) != tc.all) {
				t.Fatalf("pick %q %d %s %s; want %q %d %s %s", p.user, p.q, p.val, p.all, tc.user, tc.q, tc.val, tc.all)
			}
		})
	}
}
