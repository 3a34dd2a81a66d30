package postgres

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/postgres/pgtest"
	"github.com/slackask/slackask/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openURL(t testing.TB, u string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), u, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	pgtest.URL(t) // skips without a server
	storetest.Run(t, func(t *testing.T) store.Store { return openURL(t, pgtest.URL(t)) })
}

func TestConformanceShared(t *testing.T) {
	pgtest.URL(t)
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		u := pgtest.URL(t)
		return openURL(t, u), openURL(t, u)
	})
}

func TestDurable(t *testing.T) {
	u := pgtest.URL(t)
	// RunDurable's path stands for the database: every path maps to the
	// same schema, which starts empty.
	storetest.RunDurable(t, func(t *testing.T, _ string) store.Store { return openURL(t, u) })
}

func TestWithSchemaCreatesIt(t *testing.T) {
	u := pgtest.URL(t)
	name := "x_" + strings.ReplaceAll(t.Name(), "/", "_")
	s := openURL(t, u, WithSchema(name))
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), u)
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE")
			_ = conn.Close(context.Background())
		}
	})
	if s.Schema() != name {
		t.Errorf("Schema() = %q, want %q", s.Schema(), name)
	}
	if _, _, err := s.Create(t.Context(), store.Record{Ask: interaction.Ask{ID: "a", Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	// The URL's own schema stays empty.
	other := openURL(t, u)
	if _, err := other.Get(t.Context(), "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a record of schema %s is visible in %s: %v", name, other.Schema(), err)
	}
}

// Replicas that start together migrate once: the advisory lock makes the
// others wait and find the schema current.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	u := pgtest.URL(t)
	const n = 4
	errs := make(chan error, n)
	stores := make(chan *Store, n)
	for range n {
		go func() {
			s, err := Open(t.Context(), u)
			errs <- err
			stores <- s
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Open: %v", err)
		}
		if s := <-stores; s != nil {
			t.Cleanup(func() { _ = s.Close() })
		}
	}
	s := openURL(t, u)
	var rows, max int
	if err := s.pool.QueryRow(t.Context(), "SELECT count(*), max(version) FROM schema_migrations").Scan(&rows, &max); err != nil {
		t.Fatal(err)
	}
	if rows != SchemaVersion() || max != SchemaVersion() {
		t.Errorf("schema_migrations has %d rows up to %d, want %d", rows, max, SchemaVersion())
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	u := pgtest.URL(t)
	s := openURL(t, u)
	if _, err := s.pool.Exec(t.Context(), "INSERT INTO schema_migrations (version, name) VALUES (99, '0099_future.sql')"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), u)
	if !errors.Is(err, ErrSchemaTooNew) || interaction.ErrorCode(err) != interaction.Internal {
		t.Fatalf("Open of a newer schema: err = %v, want ErrSchemaTooNew, INTERNAL", err)
	}
}

func TestOpenBadURL(t *testing.T) {
	for _, u := range []string{"", "slackask.db", "mysql://x", "postgres://user:hunter2@127.0.0.1:1/db?connect_timeout=1"} {
		s, err := Open(t.Context(), u)
		if err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded", u)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open's error shows the password: %v", err)
		}
	}
}

func TestReadMigrations(t *testing.T) {
	ms, err := schema.All()
	if err != nil || len(ms) == 0 || ms[0].Name != "0001_init.sql" {
		t.Fatalf("embedded migrations: %v, %v", ms, err)
	}
}

// When the LISTEN connection is lost, the store makes it again and tells
// its watchers to resync; changes after that arrive as before.
func TestWatchResyncAfterLostConnection(t *testing.T) {
	u := pgtest.URL(t)
	s := openURL(t, u)
	changes := make(chan store.Change, 100)
	defer s.Watch(func(c store.Change) { changes <- c })()
	pid := s.listenPID.Load()
	if pid == 0 {
		t.Fatal("no listen connection")
	}
	if _, err := s.pool.Exec(t.Context(), "SELECT pg_terminate_backend($1)", int32(pid)); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(10 * time.Second)
	for resync := false; !resync; {
		select {
		case c := <-changes:
			resync = c.Resync && c.ID == ""
		case <-timeout:
			t.Fatal("no Resync within 10s of losing the listen connection")
		}
	}
	if _, _, err := s.Create(t.Context(), store.Record{Ask: interaction.Ask{ID: "after", Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case c := <-changes:
			if c.ID == "after" {
				return
			}
		case <-timeout:
			t.Fatal("no change after the reconnection")
		}
	}
}

// A record whose JSON does not decode is an INTERNAL error, not a panic.
func TestCorruptRow(t *testing.T) {
	u := pgtest.URL(t)
	s := openURL(t, u)
	ctx := t.Context()
	if _, _, err := s.Create(ctx, store.Record{Ask: interaction.Ask{ID: "bad", Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE asks SET record = '{"id": "other"}', wake_at = 1 WHERE id = 'bad'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "bad"); interaction.ErrorCode(err) != interaction.Internal {
		t.Errorf("Get of a corrupt row: %v, want INTERNAL", err)
	}
	// fn may run on the record s cached from its Create (the row's xmin
	// then tells it is stale); it never runs on the corrupt one.
	sawCorrupt := false
	if _, err := s.Update(ctx, "bad", func(r *store.Record) error { sawCorrupt = sawCorrupt || r.ID != "bad"; return nil }); interaction.ErrorCode(err) != interaction.Internal || sawCorrupt {
		t.Errorf("Update of a corrupt row: %v, fn saw it %v", err, sawCorrupt)
	}
	var version int64
	if err := s.pool.QueryRow(ctx, "SELECT version FROM asks WHERE id = 'bad'").Scan(&version); err != nil || version != 1 {
		t.Errorf("a failed Update wrote the row: version %d, %v", version, err)
	}
	good := store.Record{Ask: interaction.Ask{ID: "good", Status: interaction.StatusPending, CreatedAt: time.Now()}, WakeAt: time.Unix(0, 2)}
	if _, _, err := s.Create(ctx, good); err != nil {
		t.Fatal(err)
	}
	// A read of many leaves the corrupt row out and names it.
	wantCorrupt := func(what string, got []store.Record, err error) {
		t.Helper()
		var corrupt *store.CorruptError
		if !errors.As(err, &corrupt) || interaction.ErrorCode(err) != interaction.Internal || !errors.Is(err, store.ErrCorrupt) ||
			!slices.Equal(corrupt.IDs, []string{"bad"}) || len(got) != 1 || got[0].ID != "good" {
			t.Errorf("%s with a corrupt row: %d records, %v; want good, and bad named (INTERNAL)", what, len(got), err)
		}
	}
	got, err := s.Pending(ctx)
	wantCorrupt("Pending", got, err)
	got, err = s.List(ctx, store.Filter{})
	wantCorrupt("List", got, err)
	// A due corrupt row is claimed (it comes back once a lease, not at
	// every claim) and left out; the good one due with it is handed on.
	got, err = s.ClaimDue(ctx, time.Now(), time.Minute, 10)
	wantCorrupt("ClaimDue", got, err)
	if got, err := s.ClaimDue(ctx, time.Now(), time.Minute, 10); err != nil || len(got) != 0 {
		t.Errorf("ClaimDue within the lease: %d records, %v; want none", len(got), err)
	}
	got, err = s.ClaimDue(ctx, time.Now().Add(2*time.Minute), time.Minute, 10)
	wantCorrupt("ClaimDue after the lease", got, err)
}

// ClaimDue is one round trip, with nothing due (a dispatcher's idle poll)
// and with a record to claim.
func TestClaimDueOneRoundTrip(t *testing.T) {
	s := openURL(t, pgtest.URL(t))
	ctx := t.Context()
	claim := func() []store.Record {
		t.Helper()
		trips := s.RoundTrips()
		got, err := s.ClaimDue(ctx, time.Now(), time.Minute, 10)
		if err != nil {
			t.Fatal(err)
		}
		if n := s.RoundTrips() - trips; n != 1 {
			t.Errorf("ClaimDue of %d records: %d round trips, want 1", len(got), n)
		}
		return got
	}
	if got := claim(); len(got) != 0 {
		t.Fatalf("claimed %d records of none", len(got))
	}
	if _, _, err := s.Create(ctx, store.Record{Ask: interaction.Ask{ID: "a", Status: interaction.StatusPending, CreatedAt: time.Now()}, WakeAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if got := claim(); len(got) != 1 || got[0].ID != "a" || got[0].WakeAt.Before(time.Now()) {
		t.Fatalf("claimed %+v, want a with its wake-up a lease ahead", got)
	}
	if got := claim(); len(got) != 0 {
		t.Errorf("a claimed again within its lease")
	}
}

// An Update whose fn fails, or whose context ends while it holds the row,
// leaves the row unlocked: another handle updates it at once.
func TestUpdateFailureReleasesRow(t *testing.T) {
	u := pgtest.URL(t)
	a, b := openURL(t, u), openURL(t, u)
	ctx := t.Context()
	if _, _, err := a.Create(ctx, store.Record{Ask: interaction.Ask{ID: "x", Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if _, err := a.Update(ctx, "x", func(*store.Record) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want fn's error", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	if _, err := a.Update(cctx, "x", func(*store.Record) error { cancel(); return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Update cancelled inside fn = %v, want context.Canceled", err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	defer wcancel()
	r, err := b.Update(wctx, "x", func(r *store.Record) error { r.Rev = 1; return nil })
	if err != nil || r.Version != 2 {
		t.Fatalf("Update through another handle = version %d, %v; want 2, nil (the row was left locked?)", r.Version, err)
	}
	// a's pool is still usable.
	if _, err := a.Update(wctx, "x", func(r *store.Record) error { r.Rev = 2; return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestAckRelay(t *testing.T) {
	u := pgtest.URL(t)
	storetest.RunAckRelay(t, openURL(t, u), openURL(t, u))
}

// The store's connections end a transaction left idle (see idleTxTimeout),
// unless the URL says otherwise.
func TestIdleTransactionTimeout(t *testing.T) {
	u := pgtest.URL(t)
	for want, url := range map[string]string{"15s": u, "1234ms": u + "&" + idleTxParam + "=1234"} {
		s := openURL(t, url)
		var got string
		if err := s.pool.QueryRow(t.Context(), "SHOW "+idleTxParam).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", idleTxParam, got, want)
		}
	}
}
