package installs

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.uber.org/goleak"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/clock"
	"github.com/slackask/slackask/internal/slackfake"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/memory"
	"github.com/slackask/slackask/store/postgres"
	"github.com/slackask/slackask/store/postgres/pgtest"
	"github.com/slackask/slackask/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC)

// rotator plays Slack's token rotation: each refresh token works once and
// gives a new bot token, valid 12 hours, and a new refresh token.
type rotator struct {
	mu      sync.Mutex
	valid   map[string]bool // refresh tokens not yet used
	calls   int
	n       int
	now     func() time.Time
	before  func(call int) // runs before the call answers (unlocked)
	failing error
	// reusable keeps a used refresh token valid (a grace Slack may give)
	reusable bool
}

func newRotator(now func() time.Time, refresh ...string) *rotator {
	r := &rotator{valid: map[string]bool{}, now: now}
	for _, t := range refresh {
		r.valid[t] = true
	}
	return r
}

func (r *rotator) Refresh(ctx context.Context, refreshToken string) (Token, error) {
	r.mu.Lock()
	r.calls++
	call, before := r.calls, r.before
	r.mu.Unlock()
	if before != nil {
		before(call)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failing != nil {
		return Token{}, r.failing
	}
	if !r.valid[refreshToken] {
		return Token{}, interaction.Errorf(interaction.SlackError, "oauth.v2.access (refresh): invalid_refresh_token")
	}
	if !r.reusable {
		delete(r.valid, refreshToken)
	}
	r.n++
	next := fmt.Sprintf("xoxe-1-refresh-%d", r.n)
	r.valid[next] = true
	return Token{BotToken: fmt.Sprintf("xoxe.xoxb-1-bot-%d", r.n), RefreshToken: next, ExpiresAt: r.now().Add(12 * time.Hour)}, nil
}

func sealer(t *testing.T) *Sealer {
	t.Helper()
	s, err := NewSealer(newKey(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func rotating(team, enterprise string, expires time.Time) Installation {
	return Installation{
		Enterprise: enterprise, Team: team, AppID: "A1", BotUserID: "U0BOT", BotID: "B1",
		BotToken: "xoxe.xoxb-1-bot-0", RefreshToken: "xoxe-1-refresh-0", ExpiresAt: expires,
		Scopes: []string{"chat:write"}, InstalledBy: "U1", InstalledAt: t0,
	}
}

func TestStoredLookupFallsBackToTheOrgWideInstall(t *testing.T) {
	ctx := t.Context()
	st := NewStored(memory.New(), sealer(t), StoredConfig{})
	team := Installation{Enterprise: "E1", Team: "T1", BotToken: "xoxb-team"}
	org := Installation{Enterprise: "E1", OrgWide: true, BotToken: "xoxb-org"}
	for _, in := range []Installation{team, org} {
		if err := st.Save(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ e, tm, want string }{{"E1", "T1", "xoxb-team"}, {"E1", "T2", "xoxb-org"}, {"E1", "", "xoxb-org"}, {"", "T1", "xoxb-team"}} {
		in, err := st.Lookup(ctx, c.e, c.tm)
		if err != nil || in.BotToken != c.want {
			t.Errorf("Lookup(%q, %q) = %q, %v; want %q", c.e, c.tm, in.BotToken, err, c.want)
		}
	}
	_, err := st.Lookup(ctx, "E2", "T9")
	if !errors.Is(err, ErrNotInstalled) || interaction.ErrorCode(err) != interaction.NotFound {
		t.Errorf("Lookup(unknown) = %v, want ErrNotInstalled (NOT_FOUND)", err)
	}
	// The org-wide install's uninstall leaves the team's own install.
	if gone, err := st.Remove(ctx, "E1", ""); err != nil || strings.Join(gone, ",") != "E1" {
		t.Errorf("Remove(E1) = %v, %v; want E1 alone", gone, err)
	}
	if in, err := st.Lookup(ctx, "E1", "T1"); err != nil || in.BotToken != "xoxb-team" {
		t.Errorf("Lookup(E1, T1) after the org's Remove = %q, %v; want the team's own", in.BotToken, err)
	}
	if _, err := st.Lookup(ctx, "E1", "T2"); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Lookup(E1, T2) after Remove = %v", err)
	}
	if err := st.Save(ctx, Installation{Team: "T3"}); interaction.ErrorCode(err) != interaction.InvalidRequest {
		t.Errorf("Save without a token = %v, want INVALID_REQUEST", err)
	}
}

// A token that expires within RefreshBefore is refreshed once however
// many lookups want it at once; one far from expiry is not refreshed.
func TestStoredRefreshesOnceInAProcess(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(t0)
	rot := newRotator(clk.Now, "xoxe-1-refresh-0")
	st := NewStored(memory.New(), sealer(t), StoredConfig{Refresher: rot, Now: clk.Now})
	if err := st.Save(ctx, rotating("T1", "", t0.Add(12*time.Hour))); err != nil {
		t.Fatal(err)
	}
	if in, err := st.Lookup(ctx, "", "T1"); err != nil || in.BotToken != "xoxe.xoxb-1-bot-0" || rot.calls != 0 {
		t.Fatalf("Lookup far from expiry = %q, %v after %d refreshes", in.BotToken, err, rot.calls)
	}
	clk.Advance(12*time.Hour - 4*time.Minute) // within the 5 minutes
	var wg sync.WaitGroup
	got := make(chan string, 10)
	for range 10 {
		wg.Go(func() {
			in, err := st.Lookup(ctx, "", "T1")
			if err != nil {
				t.Error(err)
			}
			got <- in.BotToken
		})
	}
	wg.Wait()
	close(got)
	for tok := range got {
		if tok != "xoxe.xoxb-1-bot-1" {
			t.Errorf("a lookup got %q, want the refreshed xoxe.xoxb-1-bot-1", tok)
		}
	}
	if rot.calls != 1 {
		t.Fatalf("%d refreshes for 10 lookups at once, want 1", rot.calls)
	}
	in, err := st.Lookup(ctx, "", "T1")
	if err != nil || in.RefreshToken != "xoxe-1-refresh-1" || !in.ExpiresAt.Equal(clk.Now().Add(12*time.Hour)) {
		t.Fatalf("after the refresh: %+v, %v", in, err)
	}
}

// Two replicas (two Stored on one database) refreshing one installation at
// once: whichever loses reads the winner's token; no token is lost and
// the stored refresh token is the one Slack still takes.
func TestStoredRefreshAcrossReplicas(t *testing.T) {
	for _, tc := range []struct {
		name string
		// rotation single-use: the loser's refresh is refused by Slack
		// (it runs after the winner's); else both refresh at Slack and
		// the loser loses the swap.
		loserRefreshesAfterWinner bool
	}{{"LoserRefusedBySlack", true}, {"LoserLosesTheSwap", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			clk := clock.NewFake(t0)
			db := memory.New()
			seal := sealer(t)
			rot := newRotator(clk.Now, "xoxe-1-refresh-0")
			a := NewStored(db, seal, StoredConfig{Refresher: rot, Now: clk.Now})
			var swapB func()
			b := NewStored(hookedSwap{InstallStore: db, before: func() {
				if swapB != nil {
					f := swapB
					swapB = nil
					f()
				}
			}}, seal, StoredConfig{Refresher: rot, Now: clk.Now})
			if err := a.Save(ctx, rotating("T1", "", t0.Add(time.Minute))); err != nil {
				t.Fatal(err)
			}
			var aGot Installation
			var aErr error
			if tc.loserRefreshesAfterWinner {
				// B's refresh call runs A's whole lookup first: A wins,
				// B's refresh token is then used up.
				rot.before = func(call int) {
					if call == 1 {
						rot.before = nil
						aGot, aErr = a.Lookup(ctx, "", "T1")
					}
				}
			} else {
				// B refreshes at Slack, then A runs its whole lookup
				// (refresh and swap) before B swaps: B loses the swap.
				// The refresh token B used stays valid for A.
				rot.reusable = true
				swapB = func() { aGot, aErr = a.Lookup(ctx, "", "T1") }
			}
			bGot, bErr := b.Lookup(ctx, "", "T1")
			if aErr != nil || bErr != nil {
				t.Fatalf("lookups: %v, %v", aErr, bErr)
			}
			stored, err := a.Lookup(ctx, "", "T1")
			if err != nil {
				t.Fatal(err)
			}
			if aGot.BotToken != stored.BotToken || bGot.BotToken != stored.BotToken {
				t.Errorf("A got %q, B got %q, the store has %q: the loser must use the winner's", aGot.BotToken, bGot.BotToken, stored.BotToken)
			}
			rot.mu.Lock()
			ok := rot.valid[stored.RefreshToken]
			rot.mu.Unlock()
			if !ok {
				t.Errorf("the stored refresh token %q is not one Slack still takes", stored.RefreshToken)
			}
		})
	}
}

type hookedSwap struct {
	store.InstallStore
	before func()
}

func (h hookedSwap) SwapInstall(ctx context.Context, r store.InstallRow) (store.InstallRow, error) {
	h.before()
	return h.InstallStore.SwapInstall(ctx, r)
}

// A failed refresh keeps a token that still works (and logs why, without
// a token); once the token has expired, Lookup fails with an error that
// shows no token.
func TestStoredRefreshFailureShowsNoToken(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(t0)
	rot := newRotator(clk.Now)
	rot.failing = interaction.Errorf(interaction.SlackError, "oauth.v2.access (refresh): invalid_refresh_token")
	var logs bytes.Buffer
	log := zerolog.New(&logs)
	st := NewStored(memory.New(), sealer(t), StoredConfig{Refresher: rot, Now: clk.Now, Log: &log})
	in := rotating("T1", "", t0.Add(2*time.Minute))
	if err := st.Save(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := st.Lookup(ctx, "", "T1")
	if err != nil || got.BotToken != in.BotToken {
		t.Fatalf("Lookup with a refresh failing, token still valid = %q, %v", got.BotToken, err)
	}
	clk.Advance(3 * time.Minute)
	_, err = st.Lookup(ctx, "", "T1")
	if err == nil {
		t.Fatal("Lookup of an expired token that cannot be refreshed succeeded")
	}
	for what, text := range map[string]string{"error": err.Error(), "log": logs.String()} {
		for _, secret := range []string{in.BotToken, in.RefreshToken, "xoxb-", "xoxe-"} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s shows %q: %s", what, secret, text)
			}
		}
	}
	if !strings.Contains(logs.String(), "not refreshed") {
		t.Errorf("the first failure was not logged: %q", logs.String())
	}
}

// The database file, read raw, holds no token: not the bot token, not the
// refresh token (WAL included).
func TestStoredDatabaseFileHoldsNoToken(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "slackask.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	// The token expires 12 hours after t0: the store's clock stays at t0,
	// so that the test does not depend on the day it runs.
	st := NewStored(db, sealer(t), StoredConfig{Now: func() time.Time { return t0 }})
	in := rotating("T1", "E1", t0.Add(12*time.Hour))
	in.BotToken, in.RefreshToken = "xoxe.xoxb-1-MDAwMDAwMDAwMDAwMDAwbot", "xoxe-1-MDAwMDAwMDAwMDAwMDAwrefresh"
	if err := st.Save(ctx, in); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Lookup(ctx, "E1", "T1"); err != nil || got.BotToken != in.BotToken {
		t.Fatalf("Lookup = %q, %v", got.BotToken, err)
	}
	check := func(when string) {
		files, _ := filepath.Glob(path + "*")
		if len(files) == 0 {
			t.Fatal("no database file")
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{in.BotToken, in.RefreshToken, "xoxb-1-", "xoxe-1-"} {
				if bytes.Contains(raw, []byte(secret)) {
					t.Errorf("%s: %s holds %q", when, filepath.Base(f), secret)
				}
			}
		}
	}
	check("open")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed")
}

// Rekey seals every row under the current key; afterwards the previous key
// is no longer needed.
func TestStoredRekey(t *testing.T) {
	ctx := t.Context()
	db := memory.New()
	oldKey, newKey_ := newKey(t), newKey(t)
	old, _ := NewSealer(oldKey, nil)
	before := NewStored(db, old, StoredConfig{})
	for _, tm := range []string{"T1", "T2", "T3"} {
		if err := before.Save(ctx, Installation{Team: tm, BotToken: "xoxb-" + tm}); err != nil {
			t.Fatal(err)
		}
	}
	both, _ := NewSealer(newKey_, oldKey)
	rotated := NewStored(db, both, StoredConfig{})
	if err := rotated.Save(ctx, Installation{Team: "T4", BotToken: "xoxb-T4"}); err != nil {
		t.Fatal(err)
	}
	if in, err := rotated.Lookup(ctx, "", "T2"); err != nil || in.BotToken != "xoxb-T2" {
		t.Fatalf("Lookup under the previous key = %q, %v", in.BotToken, err)
	}
	onlyNew, _ := NewSealer(newKey_, nil)
	after := NewStored(db, onlyNew, StoredConfig{})
	if _, err := after.Lookup(ctx, "", "T1"); err == nil {
		t.Fatal("a row of the old key opened without it")
	}
	n, total, err := rotated.Rekey(ctx)
	if err != nil || n != 3 || total != 4 {
		t.Fatalf("Rekey = %d of %d, %v; want 3 of 4", n, total, err)
	}
	all, err := after.List(ctx)
	if err != nil || len(all) != 4 {
		t.Fatalf("List with only the new key = %d, %v", len(all), err)
	}
	if n, _, err := rotated.Rekey(ctx); err != nil || n != 0 {
		t.Fatalf("second Rekey = %d, %v; want 0", n, err)
	}
}

// Two replicas (two Stored, each on its own handle of one database) and
// many lookups at once when the token is due, against the Slack fake
// (each refresh token works once): every lookup gets a token Slack takes,
// at most one refresh per replica reaches Slack, and the stored refresh
// token is the one Slack still takes.
func TestStoredRefreshRaceAgainstSlack(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) (a, b store.InstallStore){
		"memory": func(t *testing.T) (store.InstallStore, store.InstallStore) {
			db := memory.New()
			t.Cleanup(func() { db.Close() })
			return db, db
		},
		"postgres": func(t *testing.T) (store.InstallStore, store.InstallStore) {
			u := pgtest.URL(t)
			a, err := postgres.Open(t.Context(), u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { a.Close() })
			b, err := postgres.Open(t.Context(), u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
			return a, b
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			clk := clock.NewFake(time.Now())
			fake, err := slackfake.New(slackfake.Config{Now: clk.Now, TokenRotation: true})
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			to, err := fake.Approve(fake.URL()+"/oauth/v2/authorize?client_id=fake-client-id&scope=chat:write&redirect_uri=https://x.example.test/cb", slackfake.Approval{})
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(to)
			resp, err := slack.GetOAuthV2ResponseContext(ctx, http.DefaultClient, "fake-client-id", "fake-client-secret", u.Query().Get("code"),
				"https://x.example.test/cb", slack.OAuthOptionAPIURL(fake.APIURL()))
			if err != nil {
				t.Fatal(err)
			}
			dbA, dbB := open(t)
			seal := sealer(t)
			refresher := SlackRefresher{ClientID: "fake-client-id", ClientSecret: "fake-client-secret", APIURL: fake.APIURL(), Now: clk.Now}
			replicas := []*Stored{
				NewStored(dbA, seal, StoredConfig{Refresher: refresher, Now: clk.Now}),
				NewStored(dbB, seal, StoredConfig{Refresher: refresher, Now: clk.Now}),
			}
			in := Installation{Team: resp.Team.ID, BotToken: resp.AccessToken, RefreshToken: resp.RefreshToken,
				ExpiresAt: clk.Now().Add(time.Duration(resp.ExpiresIn) * time.Second)}
			if err := replicas[0].Save(ctx, in); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Duration(resp.ExpiresIn)*time.Second - 2*time.Minute) // due
			const lookups = 16
			var wg sync.WaitGroup
			got := make(chan Installation, lookups)
			for i := range lookups {
				wg.Go(func() {
					in, err := replicas[i%2].Lookup(ctx, "", resp.Team.ID)
					if err != nil {
						t.Error(err)
					}
					got <- in
				})
			}
			wg.Wait()
			close(got)
			for in := range got {
				if !fake.TokenValid(in.BotToken) {
					t.Errorf("a lookup got a token Slack refuses")
				}
			}
			// How many refreshes reach Slack depends on the interleaving
			// (a replica refused by Slack waits a while for the winner's
			// row): at least one, and never more than one per lookup.
			if n := fake.CallCount("oauth.v2.access") - 1; n < 1 || n > lookups {
				t.Errorf("%d refreshes for %d lookups", n, lookups)
			} else {
				t.Logf("%d refreshes reached Slack for %d lookups on 2 replicas", n, lookups)
			}
			final, err := replicas[0].Lookup(ctx, "", resp.Team.ID)
			if err != nil || final.BotToken == in.BotToken {
				t.Fatalf("after the race the stored token is still the first one (%v)", err)
			}
			clk.Advance(12 * time.Hour) // the refreshed token is due too: its refresh token must work
			next, err := replicas[1].Lookup(ctx, "", resp.Team.ID)
			if err != nil || !fake.TokenValid(next.BotToken) {
				t.Fatalf("refreshing with the stored refresh token: %v", err)
			}
		})
	}
}

// On PostgreSQL too, the installs table read raw (every column as text)
// holds no token.
func TestStoredPostgresRowsHoldNoToken(t *testing.T) {
	u := pgtest.URL(t)
	ctx := t.Context()
	db, err := postgres.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The token expires 12 hours after t0: the store's clock stays at t0,
	// so that the test does not depend on the day it runs.
	st := NewStored(db, sealer(t), StoredConfig{Now: func() time.Time { return t0 }})
	in := rotating("T1", "E1", t0.Add(12*time.Hour))
	in.BotToken, in.RefreshToken = "xoxe.xoxb-1-PGPGPGPGbot", "xoxe-1-PGPGPGPGrefresh"
	if err := st.Save(ctx, in); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The row as text (bytea in hex) and its sealed part's bytes.
	var (
		row    string
		sealed []byte
	)
	if err := conn.QueryRow(ctx, "SELECT i::text, i.sealed FROM installs i").Scan(&row, &sealed); err != nil {
		t.Fatal(err)
	}
	raw := row + string(sealed)
	if !strings.Contains(raw, "T1") {
		t.Fatalf("the raw row %q does not even name its team", raw)
	}
	for _, secret := range []string{in.BotToken, in.RefreshToken, "xoxb-1-", "xoxe-1-"} {
		if strings.Contains(raw, secret) || strings.Contains(row, hex.EncodeToString([]byte(secret))) {
			t.Errorf("the raw row holds %q", secret)
		}
	}
}

// listTeams is a TeamLister over a map of token → teams, counting calls.
type listTeams struct {
	mu    sync.Mutex
	teams map[string][]string
	calls int
}

func (l *listTeams) Teams(_ context.Context, token string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	teams, ok := l.teams[token]
	if !ok {
		return nil, interaction.Errorf(interaction.SlackError, "auth.teams.list: invalid_auth")
	}
	return slices.Clone(teams), nil
}

func (l *listTeams) set(token string, teams ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.teams[token] = teams
}

func (l *listTeams) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// TestStoredFindsATeamOfAnOrgWideInstall: a team named alone (T…) finds
// the org-wide install serving it once auth.teams.list names it: listed at
// install, and again (at most once per RelearnEvery) when an unknown team
// is named, so a workspace added to the app later is found too.
func TestStoredFindsATeamOfAnOrgWideInstall(t *testing.T) {
	ctx := t.Context()
	now := t0
	lister := &listTeams{teams: map[string][]string{"xoxb-org": {"T1"}}}
	st := NewStored(memory.New(), sealer(t), StoredConfig{Teams: lister, RelearnEvery: time.Minute, Now: func() time.Time { return now }})
	if err := st.Save(ctx, Installation{Enterprise: "E1", OrgWide: true, BotToken: "xoxb-org"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Save(ctx, Installation{Enterprise: "E1", Team: "T3", BotToken: "xoxb-t3"}); err != nil {
		t.Fatal(err)
	}
	if lister.count() != 1 {
		t.Fatalf("auth.teams.list called %d times at install, want 1 (for the org-wide one)", lister.count())
	}
	if in, err := st.Lookup(ctx, "", "T1"); err != nil || in.Key() != "E1" {
		t.Fatalf("Lookup(T1) = %q, %v; want the org-wide install E1", in.Key(), err)
	}
	if in, err := st.Lookup(ctx, "", "T3"); err != nil || in.BotToken != "xoxb-t3" {
		t.Fatalf("Lookup(T3) = %q, %v; want its own install", in.BotToken, err)
	}
	if got, err := st.Teams(ctx, "E1"); err != nil || !slices.Equal(got, []string{"T1"}) {
		t.Fatalf("Teams(E1) = %v, %v", got, err)
	}
	// An admin adds the app to T2: the first lookup of T2 asks again.
	lister.set("xoxb-org", "T1", "T2")
	if in, err := st.Lookup(ctx, "", "T2"); err != nil || in.Key() != "E1" {
		t.Fatalf("Lookup(T2) after it was added = %q, %v; want E1", in.Key(), err)
	}
	calls := lister.count()
	// Unknown teams within RelearnEvery of that do not ask Slack again.
	for range 5 {
		if _, err := st.Lookup(ctx, "", "T9"); !errors.Is(err, ErrNotInstalled) {
			t.Fatalf("Lookup(T9) = %v, want ErrNotInstalled", err)
		}
	}
	if got := lister.count(); got != calls {
		t.Errorf("5 lookups of an unknown team called auth.teams.list %d times within a minute of the last, want 0", got-calls)
	}
	now = now.Add(time.Minute)
	if _, err := st.Lookup(ctx, "", "T9"); !errors.Is(err, ErrNotInstalled) || lister.count() != calls+1 {
		t.Fatalf("Lookup(T9) a minute later = %v after %d calls; want ErrNotInstalled after 1", err, lister.count()-calls)
	}
	// The admin removes the app from T1; a minute later T1 is unknown.
	lister.set("xoxb-org", "T2")
	now = now.Add(time.Minute)
	if err := st.Learn(ctx, "E1"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Lookup(ctx, "", "T1"); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Lookup(T1) after its removal = %v, want ErrNotInstalled", err)
	}
	// The org-wide uninstall forgets its teams; the team's own stays.
	if gone, err := st.Remove(ctx, "E1", ""); err != nil || !slices.Equal(gone, []string{"E1"}) {
		t.Fatalf("Remove(E1) = %v, %v", gone, err)
	}
	if got, err := st.Teams(ctx, "E1"); err != nil || len(got) != 0 {
		t.Errorf("Teams(E1) after uninstall = %v, %v", got, err)
	}
	if in, err := st.Lookup(ctx, "", "T3"); err != nil || in.BotToken != "xoxb-t3" {
		t.Errorf("Lookup(T3) after the org's uninstall = %q, %v; want its own install", in.BotToken, err)
	}
}
