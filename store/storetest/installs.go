package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slackask/slackask/store"
)

func installRow(key, enterprise, team string, orgWide bool, sealed string) store.InstallRow {
	return store.InstallRow{
		Key: key, Enterprise: enterprise, Team: team, OrgWide: orgWide,
		Sealed: []byte(sealed), UpdatedAt: base.UTC(),
	}
}

// testInstalls: SaveInstall inserts or replaces by Key (Version 1, then
// +1); InstallFor finds the team's own row, else its enterprise's org-wide
// one; DeleteInstalls removes one team or a whole enterprise.
func testInstalls(t *testing.T, s store.Store) {
	ctx := t.Context()
	t1 := installRow("T1", "E1", "T1", false, "sealed-t1")
	t1.ExpiresAt = base.Add(12 * time.Hour).UTC()
	rows := []store.InstallRow{t1, installRow("E1", "E1", "", true, "sealed-e1"), installRow("T9", "", "T9", false, "sealed-t9")}
	for _, r := range rows {
		got, err := s.SaveInstall(ctx, r)
		r.Version = 1
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("SaveInstall %s = %+v, %v; want %+v", r.Key, got, err, r)
		}
	}
	for _, c := range []struct{ enterprise, team, want string }{
		{"E1", "T1", "T1"}, {"", "T1", "T1"}, {"E1", "T2", "E1"}, {"E1", "", "E1"}, {"", "T9", "T9"},
		{"", "T2", ""}, {"E2", "T2", ""}, {"", "", ""}, {"", "E1", ""}, {"T1", "", ""},
	} {
		got, err := s.InstallFor(ctx, c.enterprise, c.team)
		switch {
		case c.want == "" && !errors.Is(err, store.ErrNoInstall):
			t.Errorf("InstallFor(%q, %q) = %+v, %v; want ErrNoInstall", c.enterprise, c.team, got, err)
		case c.want != "" && (err != nil || got.Key != c.want):
			t.Errorf("InstallFor(%q, %q) = %q, %v; want %q", c.enterprise, c.team, got.Key, err, c.want)
		}
	}
	got, err := s.InstallFor(ctx, "E1", "T1")
	if want := rows[0]; err != nil || !reflect.DeepEqual(got, withVersion(want, 1)) {
		t.Errorf("InstallFor(E1, T1) = %+v, %v; want %+v", got, err, withVersion(want, 1))
	}
	// A reinstall replaces the row and bumps its version.
	again := installRow("T1", "E1", "T1", false, "sealed-t1-again")
	if got, err := s.SaveInstall(ctx, again); err != nil || got.Version != 2 || string(got.Sealed) != "sealed-t1-again" || !got.ExpiresAt.IsZero() {
		t.Fatalf("SaveInstall(again) = %+v, %v; want version 2, new sealed part, no expiry", got, err)
	}
	all, err := s.Installs(ctx)
	if err != nil || len(all) != 3 || all[0].Key != "E1" || all[1].Key != "T1" || all[2].Key != "T9" {
		t.Fatalf("Installs = %+v, %v; want E1, T1, T9", all, err)
	}
	bad := installRow("T5", "", "T6", false, "x")
	if _, err := s.SaveInstall(ctx, bad); err == nil {
		t.Error("SaveInstall with a key that is not its team succeeded")
	}
	if _, err := s.SaveInstall(ctx, installRow("T5", "", "T5", false, "")); err == nil {
		t.Error("SaveInstall with nothing sealed succeeded")
	}
	gone, err := s.DeleteInstalls(ctx, "E1", "T2") // T2 has no row of its own
	if err != nil || len(gone) != 0 {
		t.Fatalf("DeleteInstalls(E1, T2) = %+v, %v; want none (the org-wide row stays)", gone, err)
	}
	if _, err := s.SaveInstall(ctx, installRow("T3", "E1", "T3", false, "sealed-t3")); err != nil {
		t.Fatal(err)
	}
	if gone, err := s.DeleteInstalls(ctx, "", "T9"); err != nil || len(gone) != 1 || gone[0].Key != "T9" {
		t.Fatalf("DeleteInstalls(T9) = %+v, %v", gone, err)
	}
	// An org-wide uninstall takes the org-wide row only: the org's teams'
	// own installs are installations of their own.
	gone, err = s.DeleteInstalls(ctx, "E1", "")
	if err != nil || len(gone) != 1 || gone[0].Key != "E1" {
		t.Fatalf("DeleteInstalls(E1) = %+v, %v; want E1 alone", gone, err)
	}
	if all, err := s.Installs(ctx); err != nil || len(all) != 2 || all[0].Key != "T1" || all[1].Key != "T3" {
		t.Fatalf("Installs after deleting E1 = %+v, %v; want T1, T3", all, err)
	}
	for _, team := range []string{"T1", "T3"} {
		if gone, err := s.DeleteInstalls(ctx, "E1", team); err != nil || len(gone) != 1 || gone[0].Key != team {
			t.Fatalf("DeleteInstalls(E1, %s) = %+v, %v", team, gone, err)
		}
	}
	if all, err := s.Installs(ctx); err != nil || len(all) != 0 {
		t.Fatalf("Installs after deleting all = %+v, %v", all, err)
	}
	if gone, err := s.DeleteInstalls(ctx, "", ""); err != nil || len(gone) != 0 {
		t.Fatalf("DeleteInstalls(\"\", \"\") = %+v, %v; want nothing", gone, err)
	}
}

// testInstallTeams: the teams recorded for an org-wide install make
// InstallFor find it by a team alone; a team's own row still comes first;
// SetInstallTeams replaces the set (a team may move to another
// enterprise); deleting the org-wide row forgets its teams.
func testInstallTeams(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, r := range []store.InstallRow{
		installRow("E1", "E1", "", true, "e1"), installRow("E2", "E2", "", true, "e2"), installRow("T3", "E1", "T3", false, "t3"),
	} {
		if _, err := s.SaveInstall(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetInstallTeams(ctx, "E1", []string{"T1", "T2", "T3"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetInstallTeams(ctx, "E2", []string{"T5"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetInstallTeams(ctx, "", []string{"T9"}); err == nil {
		t.Error("SetInstallTeams with no enterprise succeeded")
	}
	lookups := func(when string, cases []struct{ enterprise, team, want string }) {
		t.Helper()
		for _, c := range cases {
			got, err := s.InstallFor(ctx, c.enterprise, c.team)
			switch {
			case c.want == "" && !errors.Is(err, store.ErrNoInstall):
				t.Errorf("%s: InstallFor(%q, %q) = %q, %v; want ErrNoInstall", when, c.enterprise, c.team, got.Key, err)
			case c.want != "" && (err != nil || got.Key != c.want):
				t.Errorf("%s: InstallFor(%q, %q) = %q, %v; want %q", when, c.enterprise, c.team, got.Key, err, c.want)
			}
		}
	}
	lookups("recorded", []struct{ enterprise, team, want string }{
		{"", "T1", "E1"}, {"", "T2", "E1"}, {"", "T3", "T3"}, {"", "T5", "E2"}, {"", "T4", ""},
		// A payload naming its enterprise goes by it, never by a record of another.
		{"E2", "T1", "E2"}, {"E1", "T5", "E1"}, {"E9", "T1", ""},
	})
	if got, err := s.InstallTeams(ctx, "E1"); err != nil || !reflect.DeepEqual(got, []string{"T1", "T2", "T3"}) {
		t.Errorf("InstallTeams(E1) = %v, %v", got, err)
	}
	// The org admin removed T2 from E1's app, and T1 moved to E2.
	if err := s.SetInstallTeams(ctx, "E1", []string{"T3"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetInstallTeams(ctx, "E2", []string{"T1", "T5", "T1"}); err != nil {
		t.Fatal(err)
	}
	lookups("replaced", []struct{ enterprise, team, want string }{{"", "T1", "E2"}, {"", "T2", ""}, {"", "T5", "E2"}})
	if got, err := s.InstallTeams(ctx, "E2"); err != nil || !reflect.DeepEqual(got, []string{"T1", "T5"}) {
		t.Errorf("InstallTeams(E2) = %v, %v", got, err)
	}
	if gone, err := s.DeleteInstalls(ctx, "E2", ""); err != nil || len(gone) != 1 || gone[0].Key != "E2" {
		t.Fatalf("DeleteInstalls(E2) = %+v, %v", gone, err)
	}
	if got, err := s.InstallTeams(ctx, "E2"); err != nil || len(got) != 0 {
		t.Errorf("InstallTeams(E2) after its uninstall = %v, %v; want none", got, err)
	}
	// Reinstalled: its teams are not served until recorded again.
	if _, err := s.SaveInstall(ctx, installRow("E2", "E2", "", true, "e2")); err != nil {
		t.Fatal(err)
	}
	lookups("reinstalled", []struct{ enterprise, team, want string }{{"", "T1", ""}, {"E2", "T1", "E2"}, {"", "T3", "T3"}})
	if err := s.SetInstallTeams(ctx, "E1", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := s.InstallTeams(ctx, "E1"); err != nil || len(got) != 0 {
		t.Errorf("InstallTeams(E1) after SetInstallTeams(nil) = %v, %v; want none", got, err)
	}
}

func withVersion(r store.InstallRow, v int64) store.InstallRow {
	r.Version = v
	return r
}

// testSwapInstall: SwapInstall writes only over the version it read.
func testSwapInstall(t *testing.T, s store.Store) {
	ctx := t.Context()
	r, err := s.SaveInstall(ctx, installRow("T1", "", "T1", false, "v1"))
	if err != nil {
		t.Fatal(err)
	}
	next := r
	next.Sealed, next.ExpiresAt = []byte("v2"), base.Add(time.Hour).UTC()
	got, err := s.SwapInstall(ctx, next)
	if err != nil || got.Version != 2 || string(got.Sealed) != "v2" || !got.ExpiresAt.Equal(next.ExpiresAt) {
		t.Fatalf("SwapInstall = %+v, %v; want version 2", got, err)
	}
	stale := r
	stale.Sealed = []byte("stale")
	if _, err := s.SwapInstall(ctx, stale); !errors.Is(err, store.ErrInstallChanged) {
		t.Fatalf("SwapInstall(stale) = %v, want ErrInstallChanged", err)
	}
	if now, err := s.InstallFor(ctx, "", "T1"); err != nil || string(now.Sealed) != "v2" || now.Version != 2 {
		t.Fatalf("after a lost swap: %+v, %v; want v2 at version 2", now, err)
	}
	missing := installRow("T7", "", "T7", false, "x")
	missing.Version = 1
	if _, err := s.SwapInstall(ctx, missing); !errors.Is(err, store.ErrNoInstall) {
		t.Fatalf("SwapInstall(missing) = %v, want ErrNoInstall", err)
	}
}

// testSwapInstallConcurrent: writers that read, change and swap, reading
// again when they lose, lose no write.
func testSwapInstallConcurrent(t *testing.T, s store.Store) {
	checkSwapsLoseNothing(t, s, s)
}

func checkSwapsLoseNothing(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	if _, err := a.SaveInstall(ctx, installRow("T1", "", "T1", false, "0")); err != nil {
		t.Fatal(err)
	}
	const writers, each = 6, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		st := []store.Store{a, b}[w%2]
		wg.Go(func() {
			for range each {
				for {
					r, err := st.InstallFor(ctx, "", "T1")
					if err != nil {
						errs <- err
						return
					}
					n, _ := strconv.Atoi(string(r.Sealed))
					r.Sealed = []byte(strconv.Itoa(n + 1))
					if _, err = st.SwapInstall(ctx, r); err == nil {
						break
					} else if !errors.Is(err, store.ErrInstallChanged) {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	r, err := a.InstallFor(ctx, "", "T1")
	if want := fmt.Sprint(writers * each); err != nil || string(r.Sealed) != want || r.Version != writers*each+1 {
		t.Fatalf("after %d swaps: %q at version %d, %v; want %s at version %d", writers*each, r.Sealed, r.Version, err, want, writers*each+1)
	}
}

// testNonces: a nonce is used once until it expires; of callers racing
// with one nonce exactly one wins.
func testNonces(t *testing.T, s store.Store) {
	checkNonces(t, s, s)
}

func checkNonces(t *testing.T, a, b store.Store) {
	ctx := t.Context()
	later := time.Now().Add(10 * time.Minute)
	if err := a.UseNonce(ctx, "n1", later); err != nil {
		t.Fatalf("UseNonce(n1) = %v", err)
	}
	if err := b.UseNonce(ctx, "n1", later); !errors.Is(err, store.ErrNonceUsed) {
		t.Fatalf("UseNonce(n1) again = %v, want ErrNonceUsed", err)
	}
	// An expired nonce is forgotten: its state is refused by its expiry
	// before its nonce is ever looked at.
	if err := a.UseNonce(ctx, "old", time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := b.UseNonce(ctx, "old", later); err != nil {
		t.Fatalf("UseNonce(an expired nonce) = %v, want it forgotten", err)
	}
	const racers = 8
	var wg sync.WaitGroup
	results := make(chan error, racers)
	for i := range racers {
		st := []store.Store{a, b}[i%2]
		wg.Go(func() { results <- st.UseNonce(ctx, "race", later) })
	}
	wg.Wait()
	close(results)
	wins := 0
	for err := range results {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, store.ErrNonceUsed):
			t.Fatalf("UseNonce(race) = %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d callers used one nonce, want exactly 1", wins)
	}
}

func testSharedSwapInstall(t *testing.T, a, b store.Store) { checkSwapsLoseNothing(t, a, b) }
func testSharedNonces(t *testing.T, a, b store.Store)      { checkNonces(t, a, b) }
