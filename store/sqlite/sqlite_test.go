package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/internal/sqlrow"
	"github.com/slackask/slackask/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openAt(t testing.TB, path string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func tempPath(t testing.TB) string { return filepath.Join(t.TempDir(), "slackask.db") }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openAt(t, tempPath(t)) })
}

func TestConformanceSynchronousFull(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	storetest.Run(t, func(t *testing.T) store.Store {
		return openAt(t, tempPath(t), WithSynchronousFull(), WithMaxReadConns(1))
	})
}

func TestDurable(t *testing.T) {
	storetest.RunDurable(t, func(t *testing.T, path string) store.Store { return openAt(t, path) })
}

// rawDB opens the file with no help from this package.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func pragma(t *testing.T, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, name string) string {
	t.Helper()
	var v string
	if err := db.QueryRowContext(t.Context(), "PRAGMA "+name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

func TestOpenSettings(t *testing.T) {
	s := openAt(t, tempPath(t))
	conn, err := s.w.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for name, want := range map[string]string{
		"journal_mode": "wal",
		"synchronous":  "1", // NORMAL
		"foreign_keys": "1",
		"busy_timeout": "5000",
		"user_version": strconv.Itoa(SchemaVersion()),
	} {
		if got := pragma(t, conn, name); got != want {
			t.Errorf("PRAGMA %s = %s, want %s", name, got, want)
		}
	}
	if got := pragma(t, s.r, "query_only"); got != "1" {
		t.Errorf("read pool: query_only = %s, want 1", got)
	}
	full := openAt(t, tempPath(t), WithSynchronousFull(), WithBusyTimeout(time.Second))
	if got := pragma(t, full.w, "synchronous"); got != "2" {
		t.Errorf("WithSynchronousFull: synchronous = %s, want 2", got)
	}
	if got := pragma(t, full.w, "busy_timeout"); got != "1000" {
		t.Errorf("WithBusyTimeout: busy_timeout = %s, want 1000", got)
	}
}

func TestMigrateIdempotent(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	s := openAt(t, path)
	if _, _, err := s.Create(ctx, store.Record{Ask: interaction.Ask{ID: "a", Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	schema := func() string {
		var all string
		rows, err := s.r.QueryContext(ctx, "SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_schema ORDER BY name")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			all += line + "\n"
		}
		return all
	}
	before := schema()
	// Migrating an up-to-date database changes nothing and keeps the data.
	for range 2 {
		if err := migrate(ctx, s.w); err != nil {
			t.Fatalf("migrate again: %v", err)
		}
	}
	if after := schema(); after != before {
		t.Errorf("schema changed by a second migration:\n%s\nvs\n%s", before, after)
	}
	if _, err := s.Get(ctx, "a"); err != nil {
		t.Errorf("record lost: %v", err)
	}
	// So does reopening.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path)
	if _, err := s.Get(ctx, "a"); err != nil {
		t.Errorf("record lost across reopen: %v", err)
	}
	if got, want := pragma(t, s.r, "user_version"), "7"; got != want || SchemaVersion() != 7 {
		t.Errorf("user_version %s, SchemaVersion %d; want 7", got, SchemaVersion())
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	path := tempPath(t)
	s := openAt(t, path)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rawDB(t, path).ExecContext(t.Context(), "PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(t.Context(), path)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema: err = %v, want ErrSchemaTooNew", err)
	}
	if interaction.ErrorCode(err) != interaction.Internal {
		t.Errorf("code %s, want INTERNAL", interaction.ErrorCode(err))
	}
	t.Log(err)
}

func TestRefusesForeignDatabase(t *testing.T) {
	path := tempPath(t)
	if _, err := rawDB(t, path).ExecContext(t.Context(), "CREATE TABLE other (x)"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(t.Context(), path); !errors.Is(err, ErrNotSlackask) {
		t.Fatalf("Open of another program's database: err = %v, want ErrNotSlackask", err)
	}
}

func TestOpenBadPath(t *testing.T) {
	for _, p := range []string{"", ":memory:", "file:x.db", filepath.Join(t.TempDir(), "missing-dir", "x.db")} {
		if s, err := Open(t.Context(), p); err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
	// A path that needs escaping in a URI works.
	dir := filepath.Join(t.TempDir(), "a dir?#%")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, filepath.Join(dir, "x y.db"))
	if _, err := os.Stat(filepath.Join(dir, "x y.db")); err != nil {
		t.Errorf("database not at the given path: %v", err)
	}
	if _, err := s.Secret(t.Context(), "k"); err != nil {
		t.Error(err)
	}
}

func TestReadMigrations(t *testing.T) {
	ms, err := schema.All()
	if err != nil || len(ms) == 0 || ms[0].Name != "0001_init.sql" {
		t.Fatalf("embedded migrations: %v, %v", ms, err)
	}
}

func TestCorruptRow(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	s := openAt(t, path)
	for _, id := range []string{"good", "bad", "wrong-id"} {
		if _, _, err := s.Create(ctx, store.Record{Ask: interaction.Ask{ID: id, Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
			t.Fatal(err)
		}
	}
	// Break two rows behind the store's back (through its own write
	// connection, which is allowed to write), as a writer does: with a new
	// version, which tells Update that its cached copy is old.
	if _, err := s.w.ExecContext(ctx, `UPDATE asks SET record = '{"id": "bad", "status": ', version = version + 1 WHERE id = 'bad'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `UPDATE asks SET record = '{"id": "other"}', version = version + 1 WHERE id = 'wrong-id'`); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"bad", "wrong-id"} {
		_, err := s.Get(ctx, id)
		if err == nil || interaction.ErrorCode(err) != interaction.Internal {
			t.Errorf("Get(%s) of a corrupt row: err = %v, want INTERNAL", id, err)
		}
		called := false
		if _, err := s.Update(ctx, id, func(*store.Record) error { called = true; return nil }); interaction.ErrorCode(err) != interaction.Internal || called {
			t.Errorf("Update(%s) of a corrupt row: err = %v, fn called %v", id, err, called)
		}
	}
	// A read of many leaves the corrupt rows out and names them.
	wantCorrupt := func(what string, got []store.Record, err error) {
		t.Helper()
		var corrupt *store.CorruptError
		if !errors.As(err, &corrupt) || interaction.ErrorCode(err) != interaction.Internal || !errors.Is(err, store.ErrCorrupt) ||
			!slices.Equal(slices.Sorted(slices.Values(corrupt.IDs)), []string{"bad", "wrong-id"}) || len(got) != 1 || got[0].ID != "good" {
			t.Errorf("%s with two corrupt rows: %d records, %v; want good, and bad and wrong-id named (INTERNAL)", what, len(got), err)
		}
	}
	got, err := s.Pending(ctx)
	wantCorrupt("Pending", got, err)
	got, err = s.List(ctx, store.Filter{Status: interaction.StatusPending})
	wantCorrupt("List", got, err)
	// An Update batched with one of a corrupt row is written all the same.
	ops := []*store.UpdateOp{
		{Ctx: ctx, ID: "bad", Fn: func(*store.Record) error { return nil }},
		{Ctx: ctx, ID: "good", Fn: func(r *store.Record) error { r.Note = "written"; return nil }},
	}
	s.UpdateBatch(ops)
	if interaction.ErrorCode(ops[0].Err) != interaction.Internal || ops[1].Err != nil || ops[1].Rec.Note != "written" {
		t.Errorf("batch with a corrupt row: %v, %v; want INTERNAL for it and the good one written", ops[0].Err, ops[1].Err)
	}
	// A due corrupt row is claimed (it comes back once a lease, not at
	// every claim) and left out; the good one due with it is handed on.
	for _, id := range []string{"good", "bad", "wrong-id"} {
		if _, err := s.w.ExecContext(ctx, `UPDATE asks SET wake_at = 1, version = version + 1 WHERE id = ?`, id); err != nil {
			t.Fatal(err)
		}
	}
	got, err = s.ClaimDue(ctx, time.Now(), time.Minute, 10)
	wantCorrupt("ClaimDue", got, err)
	if got, err := s.ClaimDue(ctx, time.Now(), time.Minute, 10); err != nil || len(got) != 0 {
		t.Errorf("ClaimDue within the lease: %d records, %v; want none", len(got), err)
	}
	if got, err := s.ClaimDue(ctx, time.Now().Add(2*time.Minute), time.Minute, 10); len(got) != 1 || got[0].ID != "good" {
		t.Errorf("ClaimDue after the lease: %d records, %v; want good again, beside the corrupt ones", len(got), err)
	}
	// Deleting the corrupt row repairs the store.
	for _, id := range []string{"bad", "wrong-id"} {
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if rs, err := s.Pending(ctx); err != nil || len(rs) != 1 {
		t.Errorf("Pending after repair = %d, %v", len(rs), err)
	}
}

func TestErrorsNameTheOperation(t *testing.T) {
	s := openAt(t, tempPath(t))
	_, err := s.Update(t.Context(), "x1", func(*store.Record) error { return nil })
	if err == nil || err.Error() != `sqlite update "x1": NOT_FOUND: no such ask` {
		t.Errorf("Update(unknown) = %v", err)
	}
	_ = s.Close()
	_, err = s.Get(t.Context(), "x1")
	if err == nil || err.Error() != `sqlite get "x1": INTERNAL: sqlite store: closed` || interaction.ErrorCode(err) != interaction.Internal {
		t.Errorf("Get after Close = %v", err)
	}
}

// A second Store on one file, in this process or another, is refused
// with an error that names the file and PostgreSQL; once the first one is
// closed, the file opens again.
func TestSecondOpenRefused(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	a := openAt(t, path)
	if _, _, err := a.Create(ctx, store.Record{Ask: interaction.Ask{ID: "x", Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, path)
	if err == nil {
		_ = b.Close()
		t.Fatal("a second Open of a file in use succeeded")
	}
	t.Log(err)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Errorf("second Open: err = %v, want ErrLocked naming %s and PostgreSQL", err, path)
	}
	if _, err := a.Get(ctx, "x"); err != nil {
		t.Errorf("the refused Open disturbed the first Store: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c := openAt(t, path)
	if _, err := c.Get(ctx, "x"); err != nil {
		t.Errorf("after Close, the reopened file lost the record: %v", err)
	}
}

// Another process on the file is refused too, and a process that dies
// without Close leaves the file free (TestKill9LosesNothingAcknowledged
// reopens after a SIGKILL).
func TestSecondProcessRefused(t *testing.T) {
	if path := os.Getenv("SLACKASK_SQLITE_OPEN"); path != "" {
		_, err := Open(context.Background(), path)
		if errors.Is(err, ErrLocked) {
			fmt.Println("refused:", err)
			os.Exit(0)
		}
		fmt.Println("not refused:", err)
		os.Exit(1)
	}
	path := tempPath(t)
	openAt(t, path)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSecondProcessRefused$")
	cmd.Env = append(os.Environ(), "SLACKASK_SQLITE_OPEN="+path)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "refused: ") {
		t.Errorf("a second process opening the file: %v\n%s", err, out)
	}
}

// TestReadsDoNotWaitForWriter: a Get runs while an Update's fn holds the
// write transaction.
func TestReadsDoNotWaitForWriter(t *testing.T) {
	ctx := t.Context()
	s := openAt(t, tempPath(t))
	if _, _, err := s.Create(ctx, store.Record{Ask: interaction.Ask{ID: "x", Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Update(ctx, "x", func(r *store.Record) error {
		got, err := s.Get(ctx, "x")
		if err != nil || got.Version != 1 {
			t.Errorf("Get inside Update = version %d, %v; want the committed version 1", got.Version, err)
		}
		r.TS = "1.1"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestKill9LosesNothingAcknowledged runs a writer in a child process, kills
// it with SIGKILL in mid-stream and checks that every write it reported as
// done is in the file.
func TestKill9LosesNothingAcknowledged(t *testing.T) {
	if path := os.Getenv("SLACKASK_SQLITE_CHILD"); path != "" {
		killChild(path)
		return
	}
	if testing.Short() {
		t.Skip("short")
	}
	path := tempPath(t)
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestKill9LosesNothingAcknowledged$")
	cmd.Env = append(os.Environ(), "SLACKASK_SQLITE_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	sc := bufio.NewScanner(out)
	for sc.Scan() && len(acked) < 300 {
		if id, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
			acked = append(acked, id)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if len(acked) < 300 {
		t.Fatalf("the child acknowledged only %d writes", len(acked))
	}
	s := openAt(t, path)
	ctx := t.Context()
	for _, ack := range acked {
		id, step, _ := strings.Cut(ack, " ")
		r, err := s.Get(ctx, id)
		if err != nil {
			t.Errorf("acknowledged %s lost: %v", ack, err)
			continue
		}
		if step == "answered" && r.Status != interaction.StatusAnswered {
			t.Errorf("acknowledged %s lost: status %s", ack, r.Status)
		}
	}
}

// killChild creates and answers asks until it is killed, printing each one
// that returned.
func killChild(path string) {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		id := fmt.Sprintf("ask-%06d", i)
		if _, _, err := s.Create(ctx, store.Record{Ask: interaction.Ask{ID: id, Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
			fmt.Println("create:", err)
			os.Exit(1)
		}
		fmt.Println("ack", id, "created")
		if i%2 == 0 {
			if _, err := s.Update(ctx, id, func(r *store.Record) error { r.Status = interaction.StatusAnswered; return nil }); err != nil {
				fmt.Println("update:", err)
				os.Exit(1)
			}
			fmt.Println("ack", id, "answered")
		}
	}
}

// The WAL reaches the database file once the writer is idle, without a
// commit paying for it and before Close.
func TestIdleCheckpoint(t *testing.T) {
	path := tempPath(t)
	s := openAt(t, path)
	ctx := context.Background()
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	now := time.Now()
	for i := range 200 {
		if _, _, err := s.Create(ctx, storetest.BenchRecord(fmt.Sprintf("ask-%04d", i), now)); err != nil {
			t.Fatal(err)
		}
	}
	if size() != before {
		t.Fatal("a commit checkpointed the WAL")
	}
	deadline := time.Now().Add(5 * time.Second)
	for size() == before {
		if time.Now().After(deadline) {
			t.Fatal("the WAL was not checkpointed while the writer was idle")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Once every commit is copied, the checkpointer sleeps until the next
// commit: an idle process is not woken by it.
func TestCheckpointerSleepsWhenIdle(t *testing.T) {
	s := openAt(t, tempPath(t))
	ctx := context.Background()
	copied := func() {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); s.checkpointed.Load() != s.writes.Load(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the WAL was not checkpointed while the writer was idle")
			}
		}
	}
	for i := range 3 {
		if _, _, err := s.Create(ctx, storetest.BenchRecord(fmt.Sprintf("ask-%d", i), time.Now())); err != nil {
			t.Fatal(err)
		}
		copied()
		polls := s.ckPolls.Load()
		time.Sleep(time.Second) // ten polls' worth of idle
		// One poll at most: a commit's signal left over from the polls
		// before the checkpoint.
		if n := s.ckPolls.Load() - polls; n > 1 {
			t.Fatalf("round %d: the checkpointer polled %d times with nothing to copy", i, n)
		}
	}
}

// ClaimDue with nothing due (a dispatcher's idle poll) commits nothing:
// the checkpointer is not woken by it. With a record due it claims it.
func TestClaimDueIdleCommitsNothing(t *testing.T) {
	s := openAt(t, tempPath(t))
	ctx := context.Background()
	r := storetest.BenchRecord("later", time.Now())
	r.WakeAt = time.Now().Add(time.Hour)
	if _, _, err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	writes := s.writes.Load()
	if got, err := s.ClaimDue(ctx, time.Now(), time.Minute, 10); err != nil || len(got) != 0 {
		t.Fatalf("ClaimDue with nothing due: %d records, %v", len(got), err)
	}
	if n := s.writes.Load() - writes; n != 0 {
		t.Errorf("ClaimDue with nothing due committed %d times", n)
	}
	got, err := s.ClaimDue(ctx, time.Now().Add(2*time.Hour), time.Minute, 10)
	if err != nil || len(got) != 1 || got[0].ID != "later" {
		t.Fatalf("ClaimDue with later due: %+v, %v", got, err)
	}
	if n := s.writes.Load() - writes; n != 1 {
		t.Errorf("the claim committed %d times, want 1", n)
	}
}

// Whatever an Update changes, the queried columns end up as a fresh
// insert of the record would write them, including when only the record
// itself changes and the indexes are left alone.
func TestUpdateKeepsQueriedColumns(t *testing.T) {
	s := openAt(t, tempPath(t))
	ctx := t.Context()
	base := time.Unix(1_700_000_000, 0)
	columns := func(id string) string {
		var status string
		var created, ended, remind, wake sql.NullInt64
		var synced int
		err := s.r.QueryRowContext(ctx, "SELECT status, created_at, ended_at, synced, remind_at, wake_at FROM asks WHERE id = ?", id).
			Scan(&status, &created, &ended, &synced, &remind, &wake)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(status, created, ended, synced, remind, wake)
	}
	want := func(r store.Record) string {
		n := func(v any) sql.NullInt64 {
			if v == nil {
				return sql.NullInt64{}
			}
			return sql.NullInt64{Int64: v.(int64), Valid: true}
		}
		return fmt.Sprint(string(r.Status), n(sqlrow.Nanos(r.CreatedAt)), n(nullNanos(r.EndedAt)), boolInt(r.Synced), n(nullZeroNanos(r.RemindAt)), n(nullZeroNanos(r.WakeAt)))
	}
	ended := base.Add(time.Hour)
	for _, tc := range []struct {
		name   string
		change func(*store.Record)
	}{
		{"record only", func(r *store.Record) { r.Rev++ }},
		{"status", func(r *store.Record) { r.Status = interaction.StatusAnswered }},
		{"ended_at", func(r *store.Record) { r.EndedAt = &ended }},
		{"synced", func(r *store.Record) { r.Synced = !r.Synced }},
		{"created_at", func(r *store.Record) { r.CreatedAt = r.CreatedAt.Add(time.Nanosecond) }},
		{"remind_at", func(r *store.Record) { r.RemindAt = base.Add(time.Minute) }},
		{"remind_at cleared", func(r *store.Record) { r.RemindAt = time.Time{} }},
		{"wake_at", func(r *store.Record) { r.WakeAt = base.Add(2 * time.Minute) }},
		{"wake_at cleared", func(r *store.Record) { r.WakeAt = time.Time{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "a-" + strings.ReplaceAll(tc.name, " ", "-")
			if _, _, err := s.Create(ctx, storetest.BenchRecord(id, base)); err != nil {
				t.Fatal(err)
			}
			got, err := s.Update(ctx, id, func(r *store.Record) error { tc.change(r); return nil })
			if err != nil {
				t.Fatal(err)
			}
			if c, w := columns(id), want(got); c != w {
				t.Fatalf("columns %s, want %s", c, w)
			}
		})
	}
}

// The Store keeps few records in memory: creating and updating 2,000 asks
// leaves at most recordCacheSize of them cached and the Go heap about
// where it was. A decoded record is over a kilobyte; the bound leaves room
// for the cached ones and what the runtime and database/sql keep between
// two measurements.
func TestHoldsFewRecords(t *testing.T) {
	const n = 2000
	s := openAt(t, tempPath(t))
	ctx := context.Background()
	now := time.Now()
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	// The statements and connections are warm before the baseline.
	if _, _, err := s.Create(ctx, storetest.BenchRecord("warm", now)); err != nil {
		t.Fatal(err)
	}
	before := heap()
	for i := range n {
		id := fmt.Sprintf("ask-%05d", i)
		if _, _, err := s.Create(ctx, storetest.BenchRecord(id, now)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Update(ctx, id, func(r *store.Record) error { r.Rev++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	after := heap()
	if c := s.records.len(); c > recordCacheSize {
		t.Fatalf("%d records cached, want at most %d", c, recordCacheSize)
	}
	if grew := int64(after) - int64(before); grew > 256*n {
		t.Fatalf("the Go heap grew by %d bytes (%d per ask) over %d asks created and updated", grew, grew/n, n)
	}
}

// The record cache shares no memory with what goes in or comes out, and a
// deleted ask leaves it.
func TestRecordCacheCopies(t *testing.T) {
	ctx := t.Context()
	s := openAt(t, tempPath(t))
	r := store.Record{Ask: interaction.Ask{ID: "a", Status: interaction.StatusPending, CreatedAt: time.Now(),
		Questions: []interaction.Question{{ID: "q", Question: "?"}}}}
	if _, _, err := s.Create(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Questions[0].ID = "changed" // the caller's copy
	out, err := s.Update(ctx, "a", func(r *store.Record) error {
		r.Progress = []interaction.Progress{{Selected: []string{"x"}}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out.Progress[0].Selected[0] = "changed" // the returned copy
	got, ok := s.records.get("a")
	if !ok || got.Questions[0].ID != "q" || got.Progress[0].Selected[0] != "x" {
		t.Fatalf("the cache shares memory with what went in or came out: %+v (cached %v)", got, ok)
	}
	got.Progress[0].Selected[0] = "changed" // what get returned
	if again, _ := s.records.get("a"); again.Progress[0].Selected[0] != "x" {
		t.Fatal("the cache shares memory with what get returned")
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.records.get("a"); ok {
		t.Fatal("a deleted ask is still cached")
	}
}

// Update uses the cached record only while the row has its version: a
// change written behind the Store's back, with a new version, is what the
// next Update sees.
func TestUpdateSeesAWriteBehindTheCache(t *testing.T) {
	ctx := t.Context()
	s := openAt(t, tempPath(t))
	if _, _, err := s.Create(ctx, store.Record{Ask: interaction.Ask{ID: "a", Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, "a", func(r *store.Record) error { r.Rev = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.records.get("a"); !ok {
		t.Fatal("the written record is not cached")
	}
	cur, err := s.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	cur.Rev, cur.Version = 7, cur.Version+1
	data, err := store.Encode(cur)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, `UPDATE asks SET record = ?, version = ? WHERE id = 'a'`, data, cur.Version); err != nil {
		t.Fatal(err)
	}
	var seen int
	if _, err := s.Update(ctx, "a", func(r *store.Record) error { seen = r.Rev; return nil }); err != nil {
		t.Fatal(err)
	}
	if seen != 7 {
		t.Fatalf("Update saw Rev %d, want 7 (the row's, not the cached 1)", seen)
	}
}

// UpdateBatch commits its ops once, each with the result Update would
// give: an op sees the ops before it, an fn's error or a done context
// skips only that op, an unknown id is ErrNotFound; an error of the
// database (a corrupt row) fails every op that was to be written and
// writes none of them.
func TestUpdateBatch(t *testing.T) {
	ctx := t.Context()
	s := openAt(t, tempPath(t))
	for _, id := range []string{"a", "b", "bad"} {
		if _, _, err := s.Create(ctx, store.Record{Ask: interaction.Ask{ID: id, Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
			t.Fatal(err)
		}
	}
	changes := make(chan store.Change, 16)
	defer s.Watch(func(c store.Change) { changes <- c })()
	errFn := errors.New("fn refused")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	bump := func(r *store.Record) error { r.Rev++; return nil }
	ops := []*store.UpdateOp{
		{Ctx: ctx, ID: "a", Fn: bump},
		{Ctx: ctx, ID: "b", Fn: func(*store.Record) error { return errFn }},
		{Ctx: ctx, ID: "a", Fn: bump},
		{Ctx: cancelled, ID: "b", Fn: bump},
		{Ctx: ctx, ID: "nope", Fn: bump},
	}
	commits := s.writes.Load()
	s.UpdateBatch(ops)
	if n := s.writes.Load() - commits; n != 1 {
		t.Fatalf("%d commits for one batch, want 1", n)
	}
	for i, want := range []error{nil, errFn, nil, context.Canceled, store.ErrNotFound} {
		if !errors.Is(ops[i].Err, want) {
			t.Errorf("op %d: %v, want %v", i, ops[i].Err, want)
		}
	}
	if ops[0].Rec.Rev != 1 || ops[2].Rec.Rev != 2 || ops[2].Rec.Version != 3 {
		t.Fatalf("a after the ops: Rev %d then %d (version %d), want 1 then 2 (3)", ops[0].Rec.Rev, ops[2].Rec.Rev, ops[2].Rec.Version)
	}
	if a, err := s.Get(ctx, "a"); err != nil || a.Rev != 2 {
		t.Fatalf("a: Rev %d (%v), want 2", a.Rev, err)
	}
	if b, err := s.Get(ctx, "b"); err != nil || b.Version != 1 {
		t.Fatalf("b: version %d (%v), want untouched", b.Version, err)
	}
	for _, want := range []string{"a@2", "a@3"} {
		if c := <-changes; fmt.Sprintf("%s@%d", c.ID, c.Version) != want {
			t.Fatalf("change %s@%d, want %s", c.ID, c.Version, want)
		}
	}

	// The database refusing a write fails the batch. (A corrupt row fails
	// only its own ops: TestCorruptRow.)
	if _, err := s.w.ExecContext(ctx, `CREATE TEMP TRIGGER refuse BEFORE UPDATE ON asks WHEN OLD.id = 'bad' BEGIN SELECT RAISE(ABORT, 'refused'); END`); err != nil {
		t.Fatal(err)
	}
	ops = []*store.UpdateOp{
		{Ctx: ctx, ID: "a", Fn: bump},
		{Ctx: ctx, ID: "b", Fn: func(*store.Record) error { return errFn }},
		{Ctx: ctx, ID: "bad", Fn: bump},
		{Ctx: ctx, ID: "b", Fn: bump},
	}
	s.UpdateBatch(ops)
	for i, want := range []interaction.Code{interaction.Internal, "", interaction.Internal, interaction.Internal} {
		if got := interaction.ErrorCode(ops[i].Err); ops[i].Err == nil || want != "" && got != want {
			t.Errorf("op %d: %v, want %s", i, ops[i].Err, want)
		}
	}
	if !errors.Is(ops[1].Err, errFn) {
		t.Errorf("op 1 lost its own error: %v", ops[1].Err)
	}
	if a, err := s.Get(ctx, "a"); err != nil || a.Rev != 2 {
		t.Fatalf("a: Rev %d (%v), want 2: a failed batch writes nothing", a.Rev, err)
	}
	// The next write is a transaction of its own; no change of the failed
	// batch was published before it.
	if _, err := s.Update(ctx, "b", bump); err != nil {
		t.Fatal(err)
	}
	if c := <-changes; c.ID != "b" || c.Version != 2 {
		t.Fatalf("next change %s@%d, want b@2", c.ID, c.Version)
	}
}

// A write whose fn fails after writing, or panics, leaves nothing of it
// and no transaction open: the next write commits on its own.
func TestWriteUndoesAFailedFn(t *testing.T) {
	ctx := t.Context()
	s := openAt(t, tempPath(t))
	if _, _, err := s.Create(ctx, store.Record{Ask: interaction.Ask{ID: "a", Status: interaction.StatusPending, CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	bump := func() error {
		_, err := s.w.ExecContext(ctx, `UPDATE asks SET version = version + 100 WHERE id = 'a'`)
		return err
	}
	errFn := errors.New("refused")
	if err := s.write(ctx, func() error {
		if err := bump(); err != nil {
			return err
		}
		return errFn
	}); !errors.Is(err, errFn) {
		t.Fatalf("write: %v, want the fn's error", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = s.write(ctx, func() error {
			_ = bump()
			panic("fn panicked")
		})
	}()
	if a, err := s.Get(ctx, "a"); err != nil || a.Version != 1 {
		t.Fatalf("a: version %d (%v), want 1: the failed writes were undone", a.Version, err)
	}
	if _, err := s.Update(ctx, "a", func(r *store.Record) error { r.Rev = 1; return nil }); err != nil {
		t.Fatalf("a write after them: %v", err)
	}
	if a, err := s.Get(ctx, "a"); err != nil || a.Version != 2 || a.Rev != 1 {
		t.Fatalf("a: version %d Rev %d (%v), want 2 and 1", a.Version, a.Rev, err)
	}
}
