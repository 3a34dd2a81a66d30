// Package storetest is the conformance suite of store.Store: every
// implementation runs it from its own tests, so that they all keep the
// contract written in package store the same way.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s := memory.New()
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// A store that keeps its records in a file also runs RunDurable; one that
// several processes can share (PostgreSQL) also runs RunShared with two
// handles on one database.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// Run runs the conformance suite, one named subtest per rule. open is called
// once per subtest and must return a new, empty store; it should close the
// store in t.Cleanup. Subtests close some stores themselves, so Close must
// tolerate a second call (its error is ignored).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Create/SetsVersion1", testCreateVersion},
		{"Create/CopiesInput", testCreateCopiesInput},
		{"Create/DuplicateID", testCreateDuplicateID},
		{"Create/IdempotencyKey", testCreateIdempotencyKey},
		{"Create/IdempotencyKeyConcurrent", testCreateIdempotencyKeyConcurrent},
		{"Create/EmptyKeysDoNotCollide", testCreateEmptyKeys},
		{"Create/KeyFreedByDelete", testCreateKeyFreedByDelete},
		{"Get/NotFound", testGetNotFound},
		{"RoundTrip/EveryField", testRoundTrip},
		{"RoundTrip/MinimalRecord", testRoundTripMinimal},
		{"Update/AppliesAndBumpsVersion", testUpdate},
		{"Update/FnErrorAborts", testUpdateFnError},
		{"Update/NotFound", testUpdateNotFound},
		{"Update/KeepsIDKeyAndVersion", testUpdateKeepsKeys},
		{"Update/ConcurrentLoseNothing", testUpdateConcurrent},
		{"Update/EndsExactlyOnce", testEndsExactlyOnce},
		{"Concurrent/MixedOperations", testConcurrentMixed},
		{"Copies/ReturnedRecordsAreDeep", testReturnedCopies},
		{"Copies/FnPointerNotRetained", testFnPointer},
		{"Delete", testDelete},
		{"List/NewestFirst", testListOrder},
		{"List/Empty", testListEmpty},
		{"List/StatusFilter", testListStatus},
		{"List/BeforeCursor", testListBefore},
		{"List/Limit", testListLimit},
		{"List/Unsynced", testListUnsynced},
		{"Pending/OldestFirstOnlyPending", testPending},
		{"Queue/OldestFirstPendingOfOneQueue", testQueue},
		{"Prune/OnlyEndedBefore", testPrune},
		{"Secret/Stable", testSecret},
		{"Secret/Concurrent", testSecretConcurrent},
		{"Context/Cancelled", testCancelledContext},
		{"Close/ThenCallsFail", testClose},
		{"ClaimDue/EarliestFirstOnlyDue", testClaimDueOrder},
		{"ClaimDue/Limit", testClaimDueLimit},
		{"ClaimDue/LeaseExpiry", testClaimDueLeaseExpiry},
		{"ClaimDue/ConcurrentNeverShared", testClaimDueConcurrent},
		{"ClaimDue/UpdateSetsNextWake", testClaimDueThenUpdate},
		{"Watch/SeesEveryWrite", testWatchSeesWrites},
		{"Watch/StopAndClose", testWatchStop},
		{"Watch/QuietWritesUnannounced", testWatchQuiet},
		{"Lease/ExclusiveRenewRelease", testLease},
		{"Lease/Expires", testLeaseExpires},
		{"Lease/Concurrent", testLeaseConcurrent},
		{"Events/InOrder", testEventsInOrder},
		{"Events/Feed", testEventsFeed},
		{"Events/GoWithTheirAsk", testEventsGoWithAsk},
		{"Events/FeedConcurrent", testEventsFeedConcurrent},
		{"List/OwnerFilter", testListOwner},
		{"Keys/CreateLookupRevoke", testKeys},
		{"Keys/Unique", testKeysUnique},
		{"Installs/SaveLookupDelete", testInstalls},
		{"Installs/OrgTeams", testInstallTeams},
		{"Installs/SwapComparesVersion", testSwapInstall},
		{"Installs/SwapConcurrentLoseNothing", testSwapInstallConcurrent},
		{"Installs/NonceOnce", testNonces},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// RunDurable checks that what a store keeps at path survives Close and a
// reopen at the same path: records (with their versions), deletions,
// idempotency keys and secrets. open opens (creating if needed) the store at
// path. RunDurable closes each store before it reopens the path; open may
// close it again in t.Cleanup.
func RunDurable(t *testing.T, open func(t *testing.T, path string) store.Store) {
	t.Helper()
	t.Run("Reopen/KeepsRecordsAndSecrets", func(t *testing.T) {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "store.db")

		s := open(t, path)
		full := fullRecord()
		mustCreate(t, s, full)
		p1 := pendingAt("p1", base.Add(time.Second))
		p1.IdempotencyKey = "key-p1"
		mustCreate(t, s, p1)
		mustCreate(t, s, pendingAt("p2", base.Add(2*time.Second)))
		mustCreate(t, s, pendingAt("gone", base.Add(3*time.Second)))
		if _, err := s.Update(ctx, "p1", func(r *store.Record) error { r.Emit(store.EventReminded, nil, map[string]int{"n": 1}); return nil }); err != nil {
			t.Fatalf("Update: %v", err)
		}
		events := mustEvents(t, s, "p1")
		if _, err := s.Update(ctx, "p2", func(r *store.Record) error { r.Rev = 7; r.TS = "1700000000.000200"; return nil }); err != nil {
			t.Fatalf("Update: %v", err)
		}
		if err := s.Delete(ctx, "gone"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		secA, secB := mustSecret(t, s, "a"), mustSecret(t, s, "b")
		want := map[string]store.Record{}
		for _, id := range []string{full.ID, "p1", "p2"} {
			want[id] = mustGet(t, s, id)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}

		s = open(t, path)
		for id, w := range want {
			got := mustGet(t, s, id)
			if d := Diff(w, got); d != "" {
				t.Errorf("after reopen, Get(%s) differs:\n%s", id, d)
			}
			if got.Version != w.Version {
				t.Errorf("after reopen, Get(%s).Version = %d, want %d", id, got.Version, w.Version)
			}
		}
		if _, err := s.Get(ctx, "gone"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after reopen, Get of a deleted record: err = %v, want ErrNotFound", err)
		}
		if got := mustEvents(t, s, "p1"); len(got) != 1 || !reflect.DeepEqual(got, events) {
			t.Errorf("after reopen, Events(p1) = %+v, want %+v", got, events)
		}
		if got := mustSecret(t, s, "a"); !equalBytes(got, secA) {
			t.Errorf("secret a changed across reopen")
		}
		if got := mustSecret(t, s, "b"); !equalBytes(got, secB) {
			t.Errorf("secret b changed across reopen")
		}
		pend, err := s.Pending(ctx)
		if err != nil {
			t.Fatalf("Pending: %v", err)
		}
		if got := ids(pend); !reflect.DeepEqual(got, []string{"p1", "p2"}) {
			t.Errorf("after reopen, Pending = %v, want [p1 p2]", got)
		}
		again := pendingAt("p1-retry", base.Add(time.Hour))
		again.IdempotencyKey = "key-p1"
		rec, created, err := s.Create(ctx, again)
		if err != nil || created || rec.ID != "p1" {
			t.Errorf("after reopen, Create with a used key = (%s, created=%v, %v), want (p1, false, nil)", rec.ID, created, err)
		}
		if _, _, err := s.Create(ctx, pendingAt("p2", base)); !errors.Is(err, store.ErrExists) {
			t.Errorf("after reopen, Create with a used id: err = %v, want ErrExists", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	})
}

// base is a fixed instant with sub-second precision in a non-UTC zone.
var base = time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.FixedZone("X", 90*60))

// pendingAt returns a minimal pending record created at t.
func pendingAt(id string, t time.Time) store.Record {
	return store.Record{Ask: interaction.Ask{
		ID:        id,
		Status:    interaction.StatusPending,
		Questions: []interaction.Question{{ID: "q1", Question: "Proceed?", Options: []interaction.Option{{Label: "Yes"}, {Label: "No"}}}},
		Channel:   "C0123",
		CreatedAt: t,
	}}
}

// endedAt returns a record ended with status st at end.
func endedAt(id string, st interaction.Status, created, end time.Time) store.Record {
	r := pendingAt(id, created)
	r.Status = st
	r.EndedAt = &end
	return r
}

// fullRecord returns a record with every field set, with sub-second times.
func fullRecord() store.Record {
	expires := base.Add(90*time.Minute + 987654321)
	ended := base.Add(3*time.Minute + 1)
	return store.Record{
		Ask: interaction.Ask{
			ID:     "ask-full",
			Status: interaction.StatusAnswered,
			Questions: []interaction.Question{
				{
					ID: "plan", Question: "Approve the plan?", Detail: "1. do it\n2. ship it", Header: "Plan review",
					Options:     []interaction.Option{{Label: "Approve", Description: "go ahead"}, {Label: "Reject", Veto: true}},
					MultiSelect: false,
					Intent:      &interaction.Intent{Kind: interaction.IntentPlanReview, Approve: "Approve"},
				},
				{
					ID: "colors", Question: "Which colours? ✓ ünïcødé", MultiSelect: true,
					Options: []interaction.Option{{Label: "red"}, {Label: "green"}, {Label: "blue", Description: "like the sky"}},
				},
				{ID: "name", Question: "Name it", Required: true, AllowOther: new(true)},
			},
			Agent:     &interaction.Agent{ID: "agent-7", Name: "Planner"},
			Channel:   "C0123",
			TS:        "1700000000.000100",
			ThreadTS:  "1699999999.000900",
			CreatedAt: base,
			ExpiresAt: &expires,
			Answer: &interaction.Answer{Answers: []interaction.AnswerItem{
				{ID: "plan", Selected: []string{"Approve"}},
				{ID: "colors", Selected: []string{"red", "blue"}},
				{ID: "name", Selected: []string{}, Custom: "Zebra \"quoted\" <tag>"},
			}},
			AnsweredBy: &interaction.User{ID: "U0456", Name: "ada"},
			EndedAt:    &ended,
			Error:      &interaction.Error{Code: interaction.AskCancelled, Message: "kept for the round trip"},
			Permalink:  "https://example.slack.com/archives/C0123/p1700000000000100",
			Wanted:     2,
			OnTimeout:  interaction.OnTimeoutAnswer,
			Responses: []interaction.Response{{
				User:   interaction.User{ID: "U0456", Name: "ada"},
				Answer: interaction.Answer{Answers: []interaction.AnswerItem{{ID: "plan", Selected: []string{"Approve"}}}},
				At:     ended.Add(-time.Second),
			}},
			Tally:          map[string]map[string]int{"plan": {"Approve": 1}},
			CallbackURL:    "https://hooks.example.com/slackask",
			CallbackEvents: []string{"response", "ended"},
			Notify:         interaction.NotifyDM,
			RemindEvery:    interaction.Duration(15 * time.Minute),
			Escalation: []interaction.EscalationStep{
				{After: interaction.Duration(30 * time.Minute), Responders: []string{"U0AAA", "S0OPS"}, Channel: "C0OPS", Notify: interaction.NotifyDM, FiredAt: &ended},
				{After: interaction.Duration(time.Hour), Responders: []string{"U0BBB"}},
			},
			Handoffs:   []interaction.Handoff{{From: interaction.User{ID: "U0456", Name: "ada"}, To: interaction.User{ID: "U0AAA", Name: "ben"}, At: ended.Add(-2 * time.Second)}},
			Posting:    interaction.PostingQueued,
			QueuePlace: 3,
			User:       "U0789",
			Mention:    []string{"U0456", "S0999"},
			Responders: []string{"U0456", "W0111"},
			VetoedBy:   &interaction.User{ID: "U0456", Name: "ada"},
			VetoedWith: &interaction.VetoChoice{Question: "q1", Label: "No"},
		},
		Reminders:      3,
		RemindSend:     &store.StepSend{Sending: ended.Add(2 * time.Minute), Attempts: 1},
		Added:          []string{"U0AAA", "S0OPS"},
		Steps:          []store.StepSend{{Sending: ended.Add(time.Minute), Attempts: 2, Sent: true}},
		IdempotencyKey: "idem-full",
		TeamID:         "E0001",
		Workspace:      "T0001",
		Owner:          "kowner1",
		AppID:          "A0002",
		Progress: []interaction.Progress{
			{Selected: []string{"Approve"}},
			{Selected: []string{"red", "blue"}},
			{Custom: "Zebra"},
			{Skipped: true},
		},
		Drafts: map[string][]interaction.Progress{
			"U0456": {{Selected: []string{"Approve"}}, {Custom: "teal"}},
			"W0111": {{Skipped: true}},
		},
		Awaited:     []string{"U0456", "W0111"},
		Rev:         3,
		Synced:      true,
		MessageGone: true,
		Drawers:     []store.Drawer{{Proc: "aproc1", At: base.Add(4*time.Minute + 999)}, {Proc: "aproc2", At: base.Add(5 * time.Minute)}},
		RemindAt:    base.Add(10*time.Minute + 555),
		Reminded:    true,
		WakeAt:      base.Add(20*time.Minute + 777),
		EndedBy:     &interaction.User{ID: "U0333", Name: "grace"},
		Note:        "ended by a test: ✓",
		Fingerprint: "v1:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		EventHook: &store.EventHook{Callback: store.Callback{URL: "https://hooks.example.com/events", Attempts: 1, First: base.Add(time.Minute + 5),
			Next: base.Add(2*time.Minute + 6), Sending: base.Add(3*time.Minute + 7), LastError: "status 500"}, Sent: 17, Marks: 4, Scanned: 3},
		Callback: &store.Callback{Attempts: 2, First: base.Add(30*time.Minute + 111), Next: base.Add(31*time.Minute + 222),
			Sending: base.Add(32*time.Minute + 333), Delivered: base.Add(33*time.Minute + 444), GaveUp: true, LastError: "webhook: deliver: status 503"},
		Ref: "C0123/1700000000.000100",
		Copies: []store.Copy{
			{For: "U0456", Ref: "D0456/1700000001.000200", Attempt: base.Add(36*time.Minute + 777)},
			{In: "C0OPS", Failed: "channel_not_found"},
		},
		PostQueue:   "C0123",
		PostAt:      base.Add(34*time.Minute + 555),
		PostAttempt: base.Add(35*time.Minute + 666),
		Version:     42, // the store sets 1
	}
}

// Diff reports how got differs from want, comparing instants with Equal
// (zone and monotonic reading do not matter) and empty slices as nil. It
// returns "" when they match. Version is not compared.
func Diff(want, got store.Record) string {
	w, g := normalized(want), normalized(got)
	w.Version, g.Version = 0, 0
	if reflect.DeepEqual(w, g) {
		return ""
	}
	wj, _ := json.MarshalIndent(w, "", "  ")
	gj, _ := json.MarshalIndent(g, "", "  ")
	return fmt.Sprintf("want %s\n got %s", wj, gj)
}

var timeType = reflect.TypeFor[time.Time]()

func normalized(r store.Record) store.Record {
	c := store.Clone(r)
	normalize(reflect.ValueOf(&c).Elem())
	return c
}

func normalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			normalize(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == timeType {
			if t := v.Interface().(time.Time); !t.IsZero() {
				v.Set(reflect.ValueOf(time.Unix(t.Unix(), int64(t.Nanosecond())).UTC()))
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				normalize(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		for i := range v.Len() {
			normalize(v.Index(i))
		}
	}
}

func mustCreate(t *testing.T, s store.Store, r store.Record) store.Record {
	t.Helper()
	rec, created, err := s.Create(t.Context(), r)
	if err != nil {
		t.Fatalf("Create(%s): %v", r.ID, err)
	}
	if !created {
		t.Fatalf("Create(%s): created = false", r.ID)
	}
	return rec
}

func mustGet(t *testing.T, s store.Store, id string) store.Record {
	t.Helper()
	r, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}

func mustList(t *testing.T, s store.Store, f store.Filter) []store.Record {
	t.Helper()
	rs, err := s.List(t.Context(), f)
	if err != nil {
		t.Fatalf("List(%+v): %v", f, err)
	}
	return rs
}

func mustSecret(t *testing.T, s store.Store, name string) []byte {
	t.Helper()
	k, err := s.Secret(t.Context(), name)
	if err != nil {
		t.Fatalf("Secret(%s): %v", name, err)
	}
	if len(k) != 32 {
		t.Fatalf("Secret(%s) has %d bytes, want 32", name, len(k))
	}
	return k
}

func ids(rs []store.Record) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func equalBytes(a, b []byte) bool { return string(a) == string(b) }

// parallel runs fn(i) for i in [0, n) at once and waits for all of them.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

func testCreateVersion(t *testing.T, s store.Store) {
	r := pendingAt("a", base)
	r.Version = 9
	rec, created, err := s.Create(t.Context(), r)
	if err != nil || !created {
		t.Fatalf("Create = (created=%v, %v), want (true, nil)", created, err)
	}
	if rec.Version != 1 {
		t.Errorf("Create returned Version %d, want 1", rec.Version)
	}
	if d := Diff(r, rec); d != "" {
		t.Errorf("Create returned a different record:\n%s", d)
	}
	if got := mustGet(t, s, "a"); got.Version != 1 {
		t.Errorf("Get.Version = %d, want 1", got.Version)
	}
}

func testCreateCopiesInput(t *testing.T, s store.Store) {
	r := fullRecord()
	mustCreate(t, s, r)
	r.Questions[0].Options[0].Label = "changed"
	r.Answer.Answers[1].Selected[0] = "changed"
	r.Mention[0] = "changed"
	r.Progress[0].Selected[0] = "changed"
	r.Agent.Name = "changed"
	*r.EndedAt = time.Time{}
	if d := Diff(fullRecord(), mustGet(t, s, r.ID)); d != "" {
		t.Errorf("changing the record passed to Create changed the store:\n%s", d)
	}
}

func testCreateDuplicateID(t *testing.T, s store.Store) {
	mustCreate(t, s, pendingAt("a", base))
	dup := pendingAt("a", base.Add(time.Hour))
	dup.Channel = "C9999"
	dup.IdempotencyKey = "other-key"
	_, created, err := s.Create(t.Context(), dup)
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("Create with a taken id: err = %v, want ErrExists", err)
	}
	if created {
		t.Errorf("Create with a taken id: created = true")
	}
	if got := mustGet(t, s, "a"); got.Channel != "C0123" || got.Version != 1 {
		t.Errorf("the existing record changed: channel %q version %d", got.Channel, got.Version)
	}
	// The refused record's key was not taken either.
	other := pendingAt("b", base)
	other.IdempotencyKey = "other-key"
	if _, created, err := s.Create(t.Context(), other); err != nil || !created {
		t.Errorf("Create with the key of a refused record = (created=%v, %v), want (true, nil)", created, err)
	}
}

func testCreateIdempotencyKey(t *testing.T, s store.Store) {
	first := pendingAt("a", base)
	first.IdempotencyKey = "k"
	mustCreate(t, s, first)
	if _, err := s.Update(t.Context(), "a", func(r *store.Record) error { r.TS = "1.2"; return nil }); err != nil {
		t.Fatal(err)
	}
	retry := pendingAt("b", base.Add(time.Minute))
	retry.IdempotencyKey = "k"
	rec, created, err := s.Create(t.Context(), retry)
	if err != nil {
		t.Fatalf("Create with a used key: %v", err)
	}
	if created {
		t.Errorf("Create with a used key: created = true")
	}
	if rec.ID != "a" || rec.TS != "1.2" || rec.Version != 2 {
		t.Errorf("Create with a used key returned %s (ts %q, version %d), want the current record a (1.2, 2)", rec.ID, rec.TS, rec.Version)
	}
	if _, err := s.Get(t.Context(), "b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a second record was stored: Get(b) err = %v", err)
	}
	if n := len(mustList(t, s, store.Filter{})); n != 1 {
		t.Errorf("List has %d records, want 1", n)
	}
	// Even with the same id, a used key answers with the existing record.
	same := pendingAt("a", base)
	same.IdempotencyKey = "k"
	if rec, created, err := s.Create(t.Context(), same); err != nil || created || rec.ID != "a" {
		t.Errorf("Create retried verbatim = (%s, created=%v, %v), want (a, false, nil)", rec.ID, created, err)
	}
}

func testCreateIdempotencyKeyConcurrent(t *testing.T, s store.Store) {
	const n = 20
	var (
		mu      sync.Mutex
		created int
		gotIDs  = map[string]int{}
	)
	parallel(n, func(i int) {
		r := pendingAt(fmt.Sprintf("ask-%02d", i), base.Add(time.Duration(i)*time.Millisecond))
		r.IdempotencyKey = "one-key"
		rec, c, err := s.Create(t.Context(), r)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("Create #%d: %v", i, err)
			return
		}
		if c {
			created++
		}
		gotIDs[rec.ID]++
	})
	if created != 1 {
		t.Errorf("%d of %d creates with one key reported created, want exactly 1", created, n)
	}
	if len(gotIDs) != 1 {
		t.Errorf("creates with one key returned different records: %v", gotIDs)
	}
	if got := len(mustList(t, s, store.Filter{})); got != 1 {
		t.Errorf("List has %d records, want 1", got)
	}
}

func testCreateEmptyKeys(t *testing.T, s store.Store) {
	mustCreate(t, s, pendingAt("a", base))
	mustCreate(t, s, pendingAt("b", base))
	if n := len(mustList(t, s, store.Filter{})); n != 2 {
		t.Errorf("List has %d records, want 2", n)
	}
}

func testCreateKeyFreedByDelete(t *testing.T, s store.Store) {
	r := pendingAt("a", base)
	r.IdempotencyKey = "k"
	mustCreate(t, s, r)
	if err := s.Delete(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	r2 := pendingAt("b", base)
	r2.IdempotencyKey = "k"
	if rec, created, err := s.Create(t.Context(), r2); err != nil || !created || rec.ID != "b" {
		t.Errorf("Create with the key of a deleted record = (%s, created=%v, %v), want (b, true, nil)", rec.ID, created, err)
	}
	// Prune frees keys too.
	e := endedAt("c", interaction.StatusAnswered, base, base)
	e.IdempotencyKey = "k2"
	mustCreate(t, s, e)
	if _, err := s.Prune(t.Context(), base.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	r3 := pendingAt("d", base)
	r3.IdempotencyKey = "k2"
	if rec, created, err := s.Create(t.Context(), r3); err != nil || !created || rec.ID != "d" {
		t.Errorf("Create with the key of a pruned record = (%s, created=%v, %v), want (d, true, nil)", rec.ID, created, err)
	}
}

func testGetNotFound(t *testing.T, s store.Store) {
	_, err := s.Get(t.Context(), "nope")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(unknown): err = %v, want ErrNotFound", err)
	}
	if c := interaction.ErrorCode(err); c != interaction.NotFound {
		t.Errorf("Get(unknown): code %s, want NOT_FOUND", c)
	}
}

// assertAllSet fails when a field of Record (or of the embedded Ask) is zero
// in the round-trip fixture, so that a field added later is not silently
// left out of the round trip.
func assertAllSet(t *testing.T, r store.Record) {
	t.Helper()
	var walk func(v reflect.Value, prefix string)
	walk = func(v reflect.Value, prefix string) {
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			if f.Anonymous {
				walk(v.Field(i), prefix+f.Name+".")
				continue
			}
			if v.Field(i).IsZero() {
				t.Errorf("round-trip fixture leaves %s%s zero: set it in storetest.fullRecord", prefix, f.Name)
			}
		}
	}
	walk(reflect.ValueOf(r), "")
}

func testRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := fullRecord()
	assertAllSet(t, want)
	rec := mustCreate(t, s, want)
	if d := Diff(want, rec); d != "" {
		t.Errorf("Create returned:\n%s", d)
	}
	got := mustGet(t, s, want.ID)
	if d := Diff(want, got); d != "" {
		t.Fatalf("Get returned:\n%s", d)
	}
	// Times keep their instant to the nanosecond.
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(*want.ExpiresAt) ||
		!got.EndedAt.Equal(*want.EndedAt) || !got.RemindAt.Equal(want.RemindAt) || !got.WakeAt.Equal(want.WakeAt) {
		t.Errorf("times changed: created %v expires %v ended %v remind %v wake %v", got.CreatedAt, got.ExpiresAt, got.EndedAt, got.RemindAt, got.WakeAt)
	}
	upd, err := s.Update(ctx, want.ID, func(*store.Record) error { return nil })
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if d := Diff(want, upd); d != "" {
		t.Errorf("a no-op Update returned:\n%s", d)
	}
	if d := Diff(want, mustGet(t, s, want.ID)); d != "" {
		t.Errorf("Get after a no-op Update returned:\n%s", d)
	}
	for name, f := range map[string]store.Filter{"all": {}, "status": {Status: interaction.StatusAnswered}} {
		rs := mustList(t, s, f)
		if len(rs) != 1 {
			t.Fatalf("List(%s) has %d records, want 1", name, len(rs))
		}
		if d := Diff(want, rs[0]); d != "" {
			t.Errorf("List(%s) returned:\n%s", name, d)
		}
	}
	// A pending record with every field round-trips through Pending too.
	p := fullRecord()
	p.ID, p.IdempotencyKey, p.Status = "ask-full-pending", "idem-full-pending", interaction.StatusPending
	mustCreate(t, s, p)
	rs, err := s.Pending(ctx)
	if err != nil || len(rs) != 1 {
		t.Fatalf("Pending = %d records, %v; want 1", len(rs), err)
	}
	if d := Diff(p, rs[0]); d != "" {
		t.Errorf("Pending returned:\n%s", d)
	}
}

func testRoundTripMinimal(t *testing.T, s store.Store) {
	want := store.Record{Ask: interaction.Ask{ID: "min", Status: interaction.StatusPending, CreatedAt: base}}
	mustCreate(t, s, want)
	got := mustGet(t, s, "min")
	if d := Diff(want, got); d != "" {
		t.Errorf("Get returned:\n%s", d)
	}
	if got.Agent != nil || got.ExpiresAt != nil || got.EndedAt != nil || got.Answer != nil || got.AnsweredBy != nil || got.Error != nil {
		t.Errorf("unset pointers came back set: %+v", got)
	}
	if !got.RemindAt.IsZero() {
		t.Errorf("RemindAt = %v, want zero", got.RemindAt)
	}
}

func testUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreate(t, s, pendingAt("a", base))
	end := base.Add(time.Minute + 42)
	rec, err := s.Update(ctx, "a", func(r *store.Record) error {
		if r.Version != 1 || r.Status != interaction.StatusPending {
			t.Errorf("fn saw version %d status %s, want 1 pending", r.Version, r.Status)
		}
		r.Status = interaction.StatusAnswered
		r.Answer = &interaction.Answer{Answers: []interaction.AnswerItem{{ID: "q1", Selected: []string{"Yes"}}}}
		r.AnsweredBy = &interaction.User{ID: "U1"}
		r.EndedAt = &end
		r.Rev++
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if rec.Version != 2 || rec.Status != interaction.StatusAnswered || rec.Rev != 1 {
		t.Errorf("Update returned version %d status %s rev %d, want 2 answered 1", rec.Version, rec.Status, rec.Rev)
	}
	got := mustGet(t, s, "a")
	if d := Diff(rec, got); d != "" || got.Version != 2 {
		t.Errorf("Get after Update (version %d):\n%s", got.Version, d)
	}
	rec, err = s.Update(ctx, "a", func(r *store.Record) error { r.Synced = true; return nil })
	if err != nil || rec.Version != 3 || !rec.Synced {
		t.Errorf("second Update = version %d synced %v, %v; want 3 true nil", rec.Version, rec.Synced, err)
	}
}

func testUpdateFnError(t *testing.T, s store.Store) {
	mustCreate(t, s, pendingAt("a", base))
	sentinel := errors.New("refused")
	_, err := s.Update(t.Context(), "a", func(r *store.Record) error {
		r.Status = interaction.StatusCancelled
		r.Channel = "changed"
		r.Questions[0].Question = "changed"
		return sentinel
	})
	if err != sentinel { //nolint:errorlint // "returned as is" means the very value
		t.Errorf("Update: err = %v, want fn's error as is", err)
	}
	got := mustGet(t, s, "a")
	if d := Diff(pendingAt("a", base), got); d != "" || got.Version != 1 {
		t.Errorf("a refused Update changed the record (version %d):\n%s", got.Version, d)
	}
	// A coded error is returned as is too.
	coded := interaction.Errorf(interaction.AskCancelled, "already ended")
	if _, err := s.Update(t.Context(), "a", func(*store.Record) error { return coded }); err != coded { //nolint:errorlint
		t.Errorf("Update: err = %v, want fn's *Error as is", err)
	}
}

func testUpdateNotFound(t *testing.T, s store.Store) {
	called := false
	_, err := s.Update(t.Context(), "nope", func(*store.Record) error { called = true; return nil })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Update(unknown): err = %v, want ErrNotFound", err)
	}
	if called {
		t.Errorf("Update(unknown) called fn")
	}
	if _, err := s.Get(t.Context(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Update(unknown) created a record: Get err = %v", err)
	}
}

func testUpdateKeepsKeys(t *testing.T, s store.Store) {
	r := pendingAt("a", base)
	r.IdempotencyKey = "k"
	mustCreate(t, s, r)
	rec, err := s.Update(t.Context(), "a", func(r *store.Record) error {
		r.ID, r.IdempotencyKey, r.Version = "b", "k2", 100
		r.TS = "9.9"
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if rec.ID != "a" || rec.IdempotencyKey != "k" || rec.Version != 2 || rec.TS != "9.9" {
		t.Errorf("Update returned id %q key %q version %d ts %q; want a k 2 9.9", rec.ID, rec.IdempotencyKey, rec.Version, rec.TS)
	}
	if got := mustGet(t, s, "a"); got.Version != 2 || got.TS != "9.9" || got.IdempotencyKey != "k" {
		t.Errorf("Get(a) = version %d ts %q key %q", got.Version, got.TS, got.IdempotencyKey)
	}
	if _, err := s.Get(t.Context(), "b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Update moved the record: Get(b) err = %v", err)
	}
	again := pendingAt("c", base)
	again.IdempotencyKey = "k"
	if rec, created, err := s.Create(t.Context(), again); err != nil || created || rec.ID != "a" {
		t.Errorf("the key no longer finds the record: Create = (%s, %v, %v)", rec.ID, created, err)
	}
}

func testUpdateConcurrent(t *testing.T, s store.Store) {
	const n = 50
	mustCreate(t, s, pendingAt("a", base))
	parallel(n, func(i int) {
		if _, err := s.Update(t.Context(), "a", func(r *store.Record) error {
			r.Rev++
			r.Mention = append(r.Mention, fmt.Sprint(i))
			return nil
		}); err != nil {
			t.Errorf("Update #%d: %v", i, err)
		}
	})
	got := mustGet(t, s, "a")
	if got.Rev != n || got.Version != n+1 || len(got.Mention) != n {
		t.Errorf("after %d concurrent updates: rev %d version %d mentions %d; want %d %d %d", n, got.Rev, got.Version, len(got.Mention), n, n+1, n)
	}
}

func testEndsExactlyOnce(t *testing.T, s store.Store) {
	const n = 30
	mustCreate(t, s, pendingAt("a", base))
	errEnded := errors.New("already ended")
	var (
		mu      sync.Mutex
		winners []interaction.Status
	)
	parallel(n, func(i int) {
		st := interaction.StatusAnswered
		if i%2 == 1 {
			st = interaction.StatusCancelled
		}
		_, err := s.Update(t.Context(), "a", func(r *store.Record) error {
			if r.Status.Ended() {
				return errEnded
			}
			end := base.Add(time.Duration(i) * time.Second)
			r.Status, r.EndedAt = st, &end
			return nil
		})
		switch {
		case err == nil:
			mu.Lock()
			winners = append(winners, st)
			mu.Unlock()
		case err != errEnded: //nolint:errorlint
			t.Errorf("Update #%d: %v", i, err)
		}
	})
	if len(winners) != 1 {
		t.Fatalf("%d of %d updates ended the ask, want exactly 1", len(winners), n)
	}
	if got := mustGet(t, s, "a"); got.Status != winners[0] || got.Version != 2 {
		t.Errorf("record: status %s version %d, want %s 2", got.Status, got.Version, winners[0])
	}
}

func testConcurrentMixed(t *testing.T, s store.Store) {
	const workers, rounds = 8, 15
	ctx := t.Context()
	mustCreate(t, s, pendingAt("shared", base))
	parallel(workers, func(w int) {
		for i := range rounds {
			id := fmt.Sprintf("w%d-%02d", w, i)
			r := pendingAt(id, base.Add(time.Duration(w*rounds+i)*time.Millisecond))
			if i%3 == 0 {
				r.IdempotencyKey = fmt.Sprintf("key-%d", i) // shared between workers
			}
			if _, _, err := s.Create(ctx, r); err != nil {
				t.Errorf("Create(%s): %v", id, err)
				return
			}
			steps := []struct {
				name string
				err  error
			}{
				{"Update", func() error {
					_, err := s.Update(ctx, "shared", func(r *store.Record) error { r.Rev++; return nil })
					return err
				}()},
				{"Get", func() error { _, err := s.Get(ctx, "shared"); return err }()},
				{"List", func() error { _, err := s.List(ctx, store.Filter{Limit: 5}); return err }()},
				{"Pending", func() error { _, err := s.Pending(ctx); return err }()},
				{"Secret", func() error { _, err := s.Secret(ctx, fmt.Sprint("s", i%4)); return err }()},
				{"Prune", func() error { _, err := s.Prune(ctx, base); return err }()},
			}
			for _, st := range steps {
				if st.err != nil {
					t.Errorf("%s: %v", st.name, st.err)
				}
			}
			if i%5 == 4 {
				err := s.Delete(ctx, id)
				if err != nil && !errors.Is(err, store.ErrNotFound) { // a keyed create may have returned another's record
					t.Errorf("Delete(%s): %v", id, err)
				}
			}
		}
	})
	if got := mustGet(t, s, "shared"); got.Rev != workers*rounds {
		t.Errorf("shared rev %d after %d updates", got.Rev, workers*rounds)
	}
}

// mutate changes every slice, map and pointer target reachable in r.
func mutate(r *store.Record) {
	r.Questions[0].Options[0].Label = "mutated"
	r.Questions[0].Intent.Approve = "mutated"
	r.Questions = append(r.Questions[:1], interaction.Question{ID: "x"})
	r.Agent.Name = "mutated"
	*r.ExpiresAt = time.Time{}
	*r.EndedAt = time.Time{}
	r.Answer.Answers[1].Selected[0] = "mutated"
	r.Answer.Answers[0].ID = "mutated"
	r.AnsweredBy.Name = "mutated"
	r.Error.Message = "mutated"
	r.Mention[0] = "mutated"
	r.Responders[0] = "mutated"
	r.Progress[1].Selected[0] = "mutated"
	r.Progress[0].Custom = "mutated"
	r.EndedBy.Name = "mutated"
}

func testReturnedCopies(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := fullRecord()
	check := func(from string) {
		t.Helper()
		if d := Diff(want, mustGet(t, s, want.ID)); d != "" {
			t.Errorf("mutating the record returned by %s changed the store:\n%s", from, d)
		}
	}
	rec := mustCreate(t, s, want)
	mutate(&rec)
	check("Create")
	rec = mustGet(t, s, want.ID)
	mutate(&rec)
	check("Get")
	rec, err := s.Update(ctx, want.ID, func(*store.Record) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	mutate(&rec)
	check("Update")
	again := fullRecord()
	again.ID = "other"
	rec, created, err := s.Create(ctx, again) // same key: the existing record
	if err != nil || created {
		t.Fatalf("Create with a used key = (%v, %v)", created, err)
	}
	mutate(&rec)
	check("Create with a used key")
	rs := mustList(t, s, store.Filter{})
	mutate(&rs[0])
	check("List")
	p := fullRecord()
	p.ID, p.IdempotencyKey, p.Status = "pending", "", interaction.StatusPending
	mustCreate(t, s, p)
	rs, err = s.Pending(ctx)
	if err != nil || len(rs) != 1 {
		t.Fatalf("Pending = %d, %v", len(rs), err)
	}
	mutate(&rs[0])
	if d := Diff(p, mustGet(t, s, "pending")); d != "" {
		t.Errorf("mutating the record returned by Pending changed the store:\n%s", d)
	}
	k := mustSecret(t, s, "k")
	k0 := append([]byte(nil), k...)
	for i := range k {
		k[i] ^= 0xff
	}
	if got := mustSecret(t, s, "k"); !equalBytes(got, k0) {
		t.Errorf("mutating the secret returned by Secret changed the store")
	}
}

func testFnPointer(t *testing.T, s store.Store) {
	want := fullRecord()
	mustCreate(t, s, want)
	var kept *store.Record
	rec, err := s.Update(t.Context(), want.ID, func(r *store.Record) error { kept = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	mutate(kept)
	if d := Diff(want, mustGet(t, s, want.ID)); d != "" {
		t.Errorf("mutating the record fn saw, after Update, changed the store:\n%s", d)
	}
	if d := Diff(want, rec); d != "" {
		t.Errorf("mutating the record fn saw, after Update, changed the returned record:\n%s", d)
	}
}

func testDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreate(t, s, pendingAt("a", base))
	mustCreate(t, s, pendingAt("b", base))
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second Delete: err = %v, want ErrNotFound", err)
	}
	if got := ids(mustList(t, s, store.Filter{})); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("List after Delete = %v, want [b]", got)
	}
	// The id can be used again.
	mustCreate(t, s, pendingAt("a", base))
}

func testListOrder(t *testing.T, s store.Store) {
	// Created out of order; c1 and c2 share an instant (given in two zones),
	// so the id breaks the tie. Times 1ns apart must keep their order.
	tie := base.Add(time.Hour)
	recs := []store.Record{
		pendingAt("c2", tie.In(time.UTC)),
		endedAt("e", interaction.StatusAnswered, base.Add(time.Nanosecond), base.Add(time.Hour)),
		pendingAt("a", base.Add(-time.Hour)),
		pendingAt("c1", tie),
		pendingAt("d", base),
		pendingAt("old", time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Hour)),
	}
	for _, r := range recs {
		mustCreate(t, s, r)
	}
	want := []string{"c2", "c1", "e", "d", "a", "old"}
	if got := ids(mustList(t, s, store.Filter{})); !reflect.DeepEqual(got, want) {
		t.Errorf("List = %v, want newest first %v", got, want)
	}
}

func testListEmpty(t *testing.T, s store.Store) {
	if rs := mustList(t, s, store.Filter{}); len(rs) != 0 {
		t.Errorf("List of an empty store = %v", ids(rs))
	}
	if rs, err := s.Pending(t.Context()); err != nil || len(rs) != 0 {
		t.Errorf("Pending of an empty store = %v, %v", ids(rs), err)
	}
	if n, err := s.Prune(t.Context(), base); err != nil || n != 0 {
		t.Errorf("Prune of an empty store = %d, %v", n, err)
	}
}

// mixed creates records of every status, one a second after base:
// p0 pending, a1 answered, c2 cancelled, b3 aborted, x4 expired, p5 pending,
// a6 answered.
func mixed(t *testing.T, s store.Store) {
	t.Helper()
	sts := []interaction.Status{
		interaction.StatusPending, interaction.StatusAnswered, interaction.StatusCancelled,
		interaction.StatusAborted, interaction.StatusExpired, interaction.StatusPending, interaction.StatusAnswered,
	}
	prefix := map[interaction.Status]string{
		interaction.StatusPending: "p", interaction.StatusAnswered: "a", interaction.StatusCancelled: "c",
		interaction.StatusAborted: "b", interaction.StatusExpired: "x",
	}
	for i, st := range sts {
		at := base.Add(time.Duration(i) * time.Second)
		r := pendingAt(fmt.Sprintf("%s%d", prefix[st], i), at)
		if st.Ended() {
			r = endedAt(r.ID, st, at, at.Add(time.Minute))
		}
		mustCreate(t, s, r)
	}
}

func testListStatus(t *testing.T, s store.Store) {
	mixed(t, s)
	for st, want := range map[interaction.Status][]string{
		interaction.StatusPending:   {"p5", "p0"},
		interaction.StatusAnswered:  {"a6", "a1"},
		interaction.StatusCancelled: {"c2"},
		interaction.StatusAborted:   {"b3"},
		interaction.StatusExpired:   {"x4"},
	} {
		if got := ids(mustList(t, s, store.Filter{Status: st})); !reflect.DeepEqual(got, want) {
			t.Errorf("List(status=%s) = %v, want %v", st, got, want)
		}
	}
	if got := ids(mustList(t, s, store.Filter{Status: interaction.StatusAnswered, Limit: 1})); !reflect.DeepEqual(got, []string{"a6"}) {
		t.Errorf("List(answered, limit 1) = %v, want [a6]", got)
	}
}

func testListBefore(t *testing.T, s store.Store) {
	mixed(t, s)
	// Strictly before: the record created at the cursor is excluded.
	f := store.Filter{Before: base.Add(4 * time.Second)}
	if got, want := ids(mustList(t, s, f)), []string{"b3", "c2", "a1", "p0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List(before 4s) = %v, want %v", got, want)
	}
	// One nanosecond later includes it.
	f.Before = f.Before.Add(time.Nanosecond)
	if got := ids(mustList(t, s, f)); len(got) == 0 || got[0] != "x4" {
		t.Errorf("List(before 4s+1ns) = %v, want x4 first", got)
	}
	f = store.Filter{Before: base.Add(5 * time.Second), Status: interaction.StatusAnswered}
	if got, want := ids(mustList(t, s, f)), []string{"a1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List(answered, before 5s) = %v, want %v", got, want)
	}
	if got := ids(mustList(t, s, store.Filter{Before: base})); len(got) != 0 {
		t.Errorf("List(before the first) = %v, want none", got)
	}
	// Paging with the cursor visits every record once, newest first.
	var all []string
	f = store.Filter{Limit: 3}
	for page := 0; page < 10; page++ {
		rs := mustList(t, s, f)
		if len(rs) == 0 {
			break
		}
		all = append(all, ids(rs)...)
		f.Before = rs[len(rs)-1].CreatedAt
	}
	if want := []string{"a6", "p5", "x4", "b3", "c2", "a1", "p0"}; !reflect.DeepEqual(all, want) {
		t.Errorf("paging by 3 = %v, want %v", all, want)
	}
}

func testListLimit(t *testing.T, s store.Store) {
	const n = 105
	for i := range n {
		mustCreate(t, s, pendingAt(fmt.Sprintf("r%03d", i), base.Add(time.Duration(i)*time.Millisecond)))
	}
	rs := mustList(t, s, store.Filter{})
	if len(rs) != 100 {
		t.Fatalf("List with no limit returned %d records, want the default 100", len(rs))
	}
	if rs[0].ID != "r104" || rs[99].ID != "r005" {
		t.Errorf("List with no limit: %s … %s, want r104 … r005", rs[0].ID, rs[99].ID)
	}
	if got := len(mustList(t, s, store.Filter{Limit: -1})); got != 100 {
		t.Errorf("List(limit -1) returned %d, want 100", got)
	}
	if got := ids(mustList(t, s, store.Filter{Limit: 3})); !reflect.DeepEqual(got, []string{"r104", "r103", "r102"}) {
		t.Errorf("List(limit 3) = %v", got)
	}
	if got := len(mustList(t, s, store.Filter{Limit: 1000})); got != n {
		t.Errorf("List(limit 1000) returned %d, want %d", got, n)
	}
	rs, err := s.Pending(t.Context())
	if err != nil || len(rs) != n {
		t.Errorf("Pending returned %d, %v; want all %d (no limit)", len(rs), err, n)
	}
}

func testListUnsynced(t *testing.T, s store.Store) {
	ctx := t.Context()
	mixed(t, s) // every record: Synced false
	for _, id := range []string{"a1", "x4"} {
		if _, err := s.Update(ctx, id, func(r *store.Record) error { r.Synced = true; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Update(ctx, "p5", func(r *store.Record) error { r.Synced = true; return nil }); err != nil {
		t.Fatal(err)
	}
	want := []string{"a6", "b3", "c2"} // ended and not synced; pending never counts
	if got := ids(mustList(t, s, store.Filter{Unsynced: true})); !reflect.DeepEqual(got, want) {
		t.Errorf("List(unsynced) = %v, want %v", got, want)
	}
	if got := ids(mustList(t, s, store.Filter{Unsynced: true, Status: interaction.StatusAnswered})); !reflect.DeepEqual(got, []string{"a6"}) {
		t.Errorf("List(unsynced, answered) = %v, want [a6]", got)
	}
	if got := ids(mustList(t, s, store.Filter{Unsynced: true, Limit: 1})); !reflect.DeepEqual(got, []string{"a6"}) {
		t.Errorf("List(unsynced, limit 1) = %v, want [a6]", got)
	}
	// Syncing takes a record out; the status filter pending yields nothing.
	if _, err := s.Update(ctx, "a6", func(r *store.Record) error { r.Synced = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustList(t, s, store.Filter{Unsynced: true})); !reflect.DeepEqual(got, []string{"b3", "c2"}) {
		t.Errorf("List(unsynced) after sync = %v, want [b3 c2]", got)
	}
	if got := ids(mustList(t, s, store.Filter{Unsynced: true, Status: interaction.StatusPending})); len(got) != 0 {
		t.Errorf("List(unsynced, pending) = %v, want none", got)
	}
}

func testPending(t *testing.T, s store.Store) {
	ctx := t.Context()
	mixed(t, s)
	mustCreate(t, s, pendingAt("early", base.Add(-time.Second)))
	mustCreate(t, s, pendingAt("tie-b", base.Add(time.Hour)))
	mustCreate(t, s, pendingAt("tie-a", base.Add(time.Hour).In(time.UTC)))
	rs, err := s.Pending(ctx)
	if err != nil {
		t.Fatalf("Pending: %v", err)
	}
	want := []string{"early", "p0", "p5", "tie-a", "tie-b"}
	if got := ids(rs); !reflect.DeepEqual(got, want) {
		t.Errorf("Pending = %v, want oldest first %v", got, want)
	}
	if _, err := s.Update(ctx, "p0", func(r *store.Record) error { r.Status = interaction.StatusExpired; return nil }); err != nil {
		t.Fatal(err)
	}
	rs, err = s.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(rs); !reflect.DeepEqual(got, []string{"early", "p5", "tie-a", "tie-b"}) {
		t.Errorf("Pending after one ended = %v", got)
	}
}

func testQueue(t *testing.T, s store.Store) {
	ctx := t.Context()
	mixed(t, s) // records in no queue
	queued := func(id, queue string, at time.Time) {
		r := pendingAt(id, at)
		r.PostQueue = queue
		mustCreate(t, s, r)
	}
	queued("q-late", "C1", base.Add(time.Hour))
	queued("q-tie-b", "C1", base.Add(time.Minute))
	queued("q-tie-a", "C1", base.Add(time.Minute).In(time.UTC))
	queued("q-early", "C1", base.Add(-time.Hour))
	queued("q-other", "C2", base.Add(-2*time.Hour))
	queue := func(name string, limit int) []string {
		t.Helper()
		got, err := s.Queue(ctx, name, limit)
		if err != nil {
			t.Fatalf("Queue(%q, %d): %v", name, limit, err)
		}
		return got
	}
	if got, want := queue("C1", 10), []string{"q-early", "q-tie-a", "q-tie-b", "q-late"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Queue(C1) = %v, want oldest first %v", got, want)
	}
	if got, want := queue("C1", 2), []string{"q-early", "q-tie-a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Queue(C1, 2) = %v, want %v", got, want)
	}
	if got := queue("C1", 0); len(got) != 0 {
		t.Errorf("Queue(C1, 0) = %v, want nothing", got)
	}
	if got := queue("C9", 10); len(got) != 0 {
		t.Errorf("Queue(C9) = %v, want nothing", got)
	}
	// Leaving the queue (posted) and ending both take an ask out of it.
	if _, err := s.Update(ctx, "q-early", func(r *store.Record) error { r.PostQueue, r.TS = "", "1.2"; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "q-tie-b", func(r *store.Record) error { r.Status = interaction.StatusAborted; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, want := queue("C1", 10), []string{"q-tie-a", "q-late"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Queue(C1) after one posted and one ended = %v, want %v", got, want)
	}
	if got, want := queue("C2", 10), []string{"q-other"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Queue(C2) = %v, want %v", got, want)
	}
}

func testPrune(t *testing.T, s store.Store) {
	ctx := t.Context()
	cut := base.Add(time.Hour)
	recs := []store.Record{
		endedAt("old-answered", interaction.StatusAnswered, base, cut.Add(-time.Minute)),
		endedAt("old-cancelled", interaction.StatusCancelled, base, cut.Add(-time.Nanosecond)),
		endedAt("old-expired", interaction.StatusExpired, base, base),
		endedAt("at-cut", interaction.StatusAborted, base, cut),                         // not before: kept
		endedAt("new-answered", interaction.StatusAnswered, base, cut.Add(time.Second)), // kept
		pendingAt("pending-old", base.Add(-24*time.Hour)),                               // pending: kept
	}
	// A pending record that carries an EndedAt (should never happen) is still
	// not pruned: only ended records go.
	weird := pendingAt("pending-with-end", base)
	weird.EndedAt = &base
	recs = append(recs, weird)
	for _, r := range recs {
		mustCreate(t, s, r)
	}
	n, err := s.Prune(ctx, cut)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if n != 3 {
		t.Errorf("Prune = %d, want 3", n)
	}
	var left []string
	for _, r := range mustList(t, s, store.Filter{}) {
		left = append(left, r.ID)
	}
	sort.Strings(left)
	if want := []string{"at-cut", "new-answered", "pending-old", "pending-with-end"}; !reflect.DeepEqual(left, want) {
		t.Errorf("after Prune: %v, want %v", left, want)
	}
	if n, err := s.Prune(ctx, cut); err != nil || n != 0 {
		t.Errorf("second Prune = %d, %v; want 0", n, err)
	}
}

func testSecret(t *testing.T, s store.Store) {
	a := mustSecret(t, s, "a")
	if equalBytes(a, make([]byte, 32)) {
		t.Errorf("Secret is all zeros")
	}
	if !equalBytes(mustSecret(t, s, "a"), a) {
		t.Errorf("Secret(a) changed between calls")
	}
	b := mustSecret(t, s, "b")
	if equalBytes(a, b) {
		t.Errorf("Secret(a) == Secret(b)")
	}
	if !equalBytes(mustSecret(t, s, "a"), a) || !equalBytes(mustSecret(t, s, "b"), b) {
		t.Errorf("secrets changed after another was created")
	}
}

func testSecretConcurrent(t *testing.T, s store.Store) {
	const rounds, n = 5, 20
	for round := range rounds {
		name := fmt.Sprintf("shared-%d", round)
		keys := make([][]byte, n)
		parallel(n, func(i int) {
			k, err := s.Secret(t.Context(), name)
			if err != nil {
				t.Errorf("Secret #%d: %v", i, err)
			}
			keys[i] = k
		})
		for i := range keys {
			if !equalBytes(keys[i], keys[0]) {
				t.Fatalf("concurrent first uses of secret %s returned different keys", name)
			}
		}
		if !equalBytes(mustSecret(t, s, name), keys[0]) {
			t.Fatalf("secret %s changed after its concurrent first use", name)
		}
	}
}

func testCancelledContext(t *testing.T, s store.Store) {
	mustCreate(t, s, pendingAt("a", base))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := s.Create(ctx, pendingAt("b", base)); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: err = %v, want context.Canceled", err)
	}
	called := false
	if _, err := s.Update(ctx, "a", func(*store.Record) error { called = true; return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("Update with a cancelled context: err = %v, want context.Canceled", err)
	}
	if called {
		t.Errorf("Update with a cancelled context called fn")
	}
	if _, err := s.Get(t.Context(), "b"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Create with a cancelled context stored the record: Get err = %v", err)
	}
	if got := mustGet(t, s, "a"); got.Version != 1 {
		t.Errorf("Update with a cancelled context changed the record: version %d", got.Version)
	}
}

func testClose(t *testing.T, s store.Store) {
	ctx := t.Context()
	mustCreate(t, s, pendingAt("a", base))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	called := false
	calls := map[string]error{}
	_, _, calls["Create"] = s.Create(ctx, pendingAt("b", base))
	_, calls["Get"] = s.Get(ctx, "a")
	_, calls["Update"] = s.Update(ctx, "a", func(*store.Record) error { called = true; return nil })
	calls["Delete"] = s.Delete(ctx, "a")
	_, calls["List"] = s.List(ctx, store.Filter{})
	_, calls["Pending"] = s.Pending(ctx)
	_, calls["Prune"] = s.Prune(ctx, base.Add(time.Hour))
	_, calls["Secret"] = s.Secret(ctx, "k")
	_, calls["ClaimDue"] = s.ClaimDue(ctx, base.Add(time.Hour), time.Minute, 10)
	_, calls["Lease"] = s.Lease(ctx, "l", "h", time.Minute)
	for name, err := range calls {
		if err == nil {
			t.Errorf("%s after Close: no error", name)
		} else if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists) {
			t.Errorf("%s after Close: %v, want a failure, not a not-found/exists answer", name, err)
		}
	}
	if called {
		t.Errorf("Update after Close called fn")
	}
}
