package storetest

import (
	"reflect"
	"testing"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// Pick is a person's pick as the lifecycle writes it: entry q of the
// record's progress (user "") or of user's draft set to p, the array
// padded to the questions, and the write quiet (store.Record.Quiet).
// saw, when not nil, gets the record fn ran on.
func Pick(user string, q int, p interaction.Progress, saw *store.Record) func(*store.Record) error {
	return func(r *store.Record) error {
		if saw != nil {
			*saw = store.Clone(*r)
		}
		set := func(ps []interaction.Progress) []interaction.Progress {
			ps = append([]interaction.Progress(nil), ps...)
			for len(ps) < len(r.Questions) {
				ps = append(ps, interaction.Progress{})
			}
			ps[q] = p
			return ps
		}
		if user == "" {
			r.Progress = set(r.Progress)
		} else {
			if r.Drafts == nil {
				r.Drafts = map[string][]interaction.Progress{}
			}
			r.Drafts[user] = set(r.Drafts[user])
		}
		r.Quiet = true
		return nil
	}
}

// TwoQuestions is a pending record of two questions ("Yes"/"No",
// "Dev"/"Prod").
func TwoQuestions(id string) store.Record {
	r := pendingAt(id, base)
	r.Questions = append(r.Questions, interaction.Question{ID: "q2", Question: "Where?", Options: []interaction.Option{{Label: "Dev"}, {Label: "Prod"}}})
	return r
}

func sel(labels ...string) interaction.Progress { return interaction.Progress{Selected: labels} }

// Picks written quietly through two handles, each over its copy that the
// other's picks made stale, all stay, the later of two on one entry
// winning; a write of another kind through one handle, announced or quiet,
// reaches the fn of the other's next pick (PostgreSQL merges a pick into
// the row only over a copy that is current but for other picks).
func testSharedPicks(t *testing.T, a, b store.Store) {
	mustCreate(t, a, TwoQuestions("x"))
	mustUpdate(t, b, "x", func(r *store.Record) error { r.Rev = 1; return nil })
	mustUpdate(t, a, "x", func(r *store.Record) error { r.Rev = 2; return nil }) // both hold a copy
	var version int64 = 3
	write := func(s store.Store, fn func(*store.Record) error, quiet bool) {
		t.Helper()
		rec := mustUpdate(t, s, "x", fn)
		version++
		if rec.Version != version || rec.Quiet != quiet {
			t.Fatalf("write %d returned version %d, quiet %v; want quiet %v", version, rec.Version, rec.Quiet, quiet)
		}
	}
	write(a, Pick("", 0, sel("Yes"), nil), true)
	write(b, Pick("", 1, sel("Prod"), nil), true)
	write(a, Pick("U1", 1, interaction.Progress{Custom: "one"}, nil), true)
	write(b, Pick("U2", 0, interaction.Progress{Skipped: true}, nil), true)
	write(a, Pick("U1", 0, sel("No"), nil), true)
	write(b, Pick("", 0, sel("No"), nil), true)
	wantProgress := []interaction.Progress{sel("No"), sel("Prod")}
	wantDrafts := map[string][]interaction.Progress{
		"U1": {sel("No"), {Custom: "one"}},
		"U2": {{Skipped: true}, {}},
	}
	for i, s := range []store.Store{a, b} {
		got := mustGet(t, s, "x")
		if !reflect.DeepEqual(got.Progress, wantProgress) || !reflect.DeepEqual(got.Drafts, wantDrafts) || got.Version != version || got.Rev != 2 {
			t.Fatalf("handle %d reads v%d rev %d progress %+v drafts %+v; want v%d rev 2, %+v, %+v",
				i, got.Version, got.Rev, got.Progress, got.Drafts, version, wantProgress, wantDrafts)
		}
	}

	// An announced write through b, then a pick through a: its fn sees it.
	write(b, func(r *store.Record) error { r.Rev = 7; return nil }, false)
	var saw store.Record
	write(a, Pick("", 1, sel("Dev"), &saw), true)
	if saw.Rev != 7 || !reflect.DeepEqual(saw.Progress, wantProgress) {
		t.Fatalf("a pick after another handle's write ran on rev %d, progress %+v", saw.Rev, saw.Progress)
	}
	// A quiet write of more than picks through a, then a pick through b.
	write(a, func(r *store.Record) error { r.Rev = 8; r.Progress[0] = sel("Yes"); r.Quiet = true; return nil }, true)
	write(b, Pick("U2", 1, sel("Dev"), &saw), true)
	if saw.Rev != 8 || !reflect.DeepEqual(saw.Progress, []interaction.Progress{sel("Yes"), sel("Dev")}) {
		t.Fatalf("a pick after another handle's quiet write of more than picks ran on rev %d, progress %+v", saw.Rev, saw.Progress)
	}

	// A batch through a whose copy b's pick made stale: its picks and an
	// announced write of the same record after them all land, in order.
	batcher, ok := a.(store.Batcher)
	if !ok {
		return
	}
	write(b, Pick("U3", 0, sel("Yes"), nil), true)
	var rev9 store.Record
	ops := []*store.UpdateOp{
		{Ctx: t.Context(), ID: "x", Fn: Pick("U1", 1, sel("Prod"), nil)},
		{Ctx: t.Context(), ID: "x", Fn: Pick("", 0, sel("No"), nil)},
		{Ctx: t.Context(), ID: "x", Fn: func(r *store.Record) error { rev9 = store.Clone(*r); r.Rev = 9; return nil }},
		{Ctx: t.Context(), ID: "x", Fn: Pick("", 1, sel("Prod"), nil)},
	}
	batcher.UpdateBatch(ops)
	for i, op := range ops {
		version++
		if op.Err != nil || op.Rec.Version != version {
			t.Fatalf("batch op %d: v%d, %v; want v%d", i, op.Rec.Version, op.Err, version)
		}
	}
	if rev9.Drafts["U3"][0].Selected[0] != "Yes" || rev9.Drafts["U1"][1].Selected[0] != "Prod" || rev9.Progress[0].Selected[0] != "No" {
		t.Fatalf("the batch's announced write ran on drafts %+v, progress %+v", rev9.Drafts, rev9.Progress)
	}
	got := mustGet(t, b, "x")
	wantProgress = []interaction.Progress{sel("No"), sel("Prod")}
	wantDrafts = map[string][]interaction.Progress{
		"U1": {sel("No"), sel("Prod")},
		"U2": {{Skipped: true}, sel("Dev")},
		"U3": {sel("Yes"), {}},
	}
	if got.Rev != 9 || got.Version != version || !reflect.DeepEqual(got.Progress, wantProgress) || !reflect.DeepEqual(got.Drafts, wantDrafts) {
		t.Fatalf("after the batch: v%d rev %d progress %+v drafts %+v; want v%d rev 9, %+v, %+v",
			got.Version, got.Rev, got.Progress, got.Drafts, version, wantProgress, wantDrafts)
	}
}

// A record deleted and created again through the other handle is the one
// a pick through the first handle, which held a copy of the first record,
// is written into and runs on.
func testSharedPickAfterRecreate(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	first := TwoQuestions("x")
	first.Note = "first"
	mustCreate(t, a, first)
	mustUpdate(t, a, "x", Pick("", 0, sel("Yes"), nil))
	if err := b.Delete(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	second := TwoQuestions("x")
	second.Note = "second"
	mustCreate(t, b, second)
	var saw store.Record
	rec := mustUpdate(t, a, "x", Pick("", 1, sel("Dev"), &saw))
	want := []interaction.Progress{{}, sel("Dev")}
	if saw.Note != "second" || rec.Version != 2 {
		t.Fatalf("a pick after a delete and create elsewhere ran on note %q and wrote v%d", saw.Note, rec.Version)
	}
	if got := mustGet(t, b, "x"); got.Note != "second" || !reflect.DeepEqual(got.Progress, want) {
		t.Fatalf("stored note %q progress %+v; want second, %+v", got.Note, got.Progress, want)
	}
}
