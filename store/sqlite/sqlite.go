// Package sqlite is slackask's default, durable store.Store: one SQLite file
// (modernc.org/sqlite, pure Go, no cgo) in WAL mode.
//
// # Layout
//
// Each ask is one row of the asks table: the whole store.Record as JSON, plus
// copies of the fields that are queried (status, created_at, ended_at,
// idempotency_key, synced, remind_at, wake_at, version) in indexed
// columns; version and wake_at are authoritative (ClaimDue moves them
// without rewriting the JSON). Times are
// integer unix nanoseconds, so sub-second precision round-trips and the
// columns sort. The events an ask's writes emit (store.Event) are rows of
// the events table, inserted in the transaction of the write, seq an
// AUTOINCREMENT key (never reused). Secrets live in the secrets table. The schema is created and
// upgraded by the numbered SQL files embedded from migrations/, tracked in
// PRAGMA user_version; a file written by a newer slackask is refused.
//
// # Concurrency
//
// Writes go through a single connection, so writers in one process queue
// behind each other instead of failing with SQLITE_BUSY; every state change
// is one transaction started with BEGIN IMMEDIATE, which takes the write lock
// up front and so also serialises writers in other processes (who wait up to
// the busy timeout). Update reads the row, calls fn and writes it back with a
// compare-and-set on the version inside that transaction. It keeps the
// records it wrote last (up to 1,024) decoded, and reads only the row's
// version when that matches its copy: a 1 KB record decoded from JSON cost a
// third of an update. Anything that changes a row behind the store's back
// must therefore give it a new version, as every Store does. When no
// queried column changes (a pick, a note), only the record is written and no
// index is touched. Reads use a separate, read-only pool and, thanks to WAL,
// never wait for a writer.
//
// # One process
//
// Open takes an exclusive lock (flock) on a sidecar file, <file>.lock, held
// until Close and dropped by the kernel when the process dies: a second
// Store on the same file, in this process or another, is refused. Watch
// and ClaimDue's exclusion work within one process, and several replicas
// need a shared server: PostgreSQL (store/postgres).
//
// # Durability
//
// A call returns only after its transaction committed. The default is
// PRAGMA synchronous=NORMAL, which in WAL mode writes every commit to the WAL
// file before returning but syncs it to disk only at checkpoints: a killed
// process (kill -9, panic, OOM) loses nothing that was acknowledged, while an
// operating-system crash or power cut may lose the last few commits (the file
// stays consistent either way). WithSynchronousFull syncs the WAL on every
// commit as well, closing that window at the cost of one fsync per write.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/internal/sqlrow"
	"github.com/slackask/slackask/store/internal/watch"
)

// Option changes how Open opens the database.
type Option func(*options)

type options struct {
	busyTimeout time.Duration
	syncFull    bool
	maxReaders  int
}

// WithBusyTimeout sets how long a statement waits for a lock held by another
// process before it fails (default 5s). Writers of this process never wait
// on each other through this timeout: they queue for the write connection.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = d }
}

// WithSynchronousFull sets PRAGMA synchronous=FULL: every commit is synced
// to disk, so that acknowledged writes survive a power cut too. The default,
// NORMAL, already survives the process being killed.
func WithSynchronousFull() Option {
	return func(o *options) { o.syncFull = true }
}

// WithMaxReadConns sets the size of the read pool (default 4).
func WithMaxReadConns(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxReaders = n
		}
	}
}

// Store is a store.Store on one SQLite file. It is safe for concurrent use.
type Store struct {
	path      string
	lock      *os.File // the flock on path+".lock", held until Close
	w         *sql.DB  // exactly one connection: every write, in order
	r         *sql.DB  // read-only pool
	ck        *sql.DB  // one connection that checkpoints the WAL
	st        statements
	records   recordCache // as last written, for Update (cache.go)
	closed    atomic.Bool
	writes    atomic.Int64  // commits so far, for the checkpointer
	lastWrite atomic.Int64  // unix nanoseconds of the latest commit
	wrote     chan struct{} // a commit since the checkpointer last looked (capacity 1)
	// The checkpointer's progress, for tests: the commits copied so far,
	// and the polls it waited for.
	checkpointed, ckPolls atomic.Int64
	stopCk                chan struct{} // closed by Close
	ckDone                chan struct{} // closed when the checkpointer returned

	// wmu is held across each write transaction and the publishing of its
	// changes, so that watchers get them in commit order.
	wmu     sync.Mutex
	changes []store.Change // of the transaction in progress, under wmu
	hub     watch.Hub
}

// The WAL is copied into the database file in the background, on its own
// connection, once the writer has been idle for checkpointIdle, or after
// checkpointMaxWrites commits in any case (which bounds the WAL to a few
// tens of MB under sustained load), never inside a commit: SQLite's own
// checkpoint, or one running while commits go on, stalls them for its
// fsyncs (tens of ms against 0.2; the figures are in a2474bb). People
// answer in bursts with seconds between, so the idle checkpoint is the one
// that runs. With every commit copied, the checkpointer sleeps until the
// next one: an idle process is not woken ten times a second.
const (
	checkpointPoll      = 100 * time.Millisecond
	checkpointIdle      = 250 * time.Millisecond
	checkpointMaxWrites = 4096
)

// pruned is the condition of the asks Prune removes (its one argument: the
// time).
const pruned = "status <> 'pending' AND ended_at IS NOT NULL AND ended_at < ?"

// statements are prepared once: parsing SQL costs as much as running it.
// The w* ones belong to the write connection, the r* ones to the read pool.
type statements struct {
	wByID, wVersion, wByKey, wExists, wInsert, wUpdate, wUpdateRecord, wDelete, wPrune *sql.Stmt
	wSecretInsert, wSecret, wDue, wClaim, wLease, wLeaseSet, wLeaseDel                 *sql.Stmt
	wBegin, wCommit, wRollback                                                         *sql.Stmt
	wEvent, wDeleteEvents, wPruneEvents                                                *sql.Stmt
	rByID, rPending, rSecret, rEvents, rFeed, rAnyDue                                  *sql.Stmt
	rInstallFor                                                                        *sql.Stmt // installs.go: each Web API call of OAuth installs reads it
}

const (
	selectEvent  = "SELECT seq, ask_id, at, kind, by_user, data FROM events "
	selectRecord = "SELECT id, version, wake_at, record FROM asks "
	selectSecret = "SELECT value FROM secrets WHERE name = ?"
)

func (s *Store) prepare(ctx context.Context) error {
	var errs []error
	prep := func(db *sql.DB, q string) *sql.Stmt {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			errs = append(errs, fmt.Errorf("prepare %q: %w", q, err))
		}
		return st
	}
	s.st = statements{
		wByID:    prep(s.w, selectRecord+"WHERE id = ?"),
		wVersion: prep(s.w, "SELECT version FROM asks WHERE id = ?"),
		wByKey:   prep(s.w, selectRecord+"WHERE idempotency_key = ?"),
		wExists:  prep(s.w, "SELECT 1 FROM asks WHERE id = ?"),
		wInsert: prep(s.w, `INSERT INTO asks
			(id, status, created_at, ended_at, idempotency_key, synced, remind_at, wake_at, version, record, owner)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		wUpdate: prep(s.w, `UPDATE asks SET
			status = ?, created_at = ?, ended_at = ?, synced = ?, remind_at = ?, wake_at = ?, version = ?, record = ?
			WHERE id = ? AND version = ?`),
		// When no indexed column changes (a pick, a note), only the
		// record is written: no index page is touched.
		wUpdateRecord: prep(s.w, `UPDATE asks SET version = ?, record = ? WHERE id = ? AND version = ?`),
		wDelete:       prep(s.w, "DELETE FROM asks WHERE id = ? RETURNING version, status"),
		wPrune:        prep(s.w, "DELETE FROM asks WHERE "+pruned+" RETURNING id, version, status"),
		// The events go with their ask (before it, in its transaction).
		wEvent:        prep(s.w, "INSERT INTO events (ask_id, at, kind, by_user, data) VALUES (?, ?, ?, ?, ?)"),
		wDeleteEvents: prep(s.w, "DELETE FROM events WHERE ask_id = ?"),
		wPruneEvents:  prep(s.w, "DELETE FROM events WHERE ask_id IN (SELECT id FROM asks WHERE "+pruned+")"),
		wDue:          prep(s.w, selectRecord+"WHERE wake_at IS NOT NULL AND wake_at <= ? ORDER BY wake_at, id LIMIT ?"),
		wClaim:        prep(s.w, "UPDATE asks SET wake_at = ?, version = version + 1 WHERE id = ?"),
		wLease:        prep(s.w, "SELECT holder, expires_at FROM leases WHERE name = ?"),
		wLeaseSet:     prep(s.w, "INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at"),
		wLeaseDel:     prep(s.w, "DELETE FROM leases WHERE name = ? AND holder = ?"),
		// Another writer may have created the secret since it was looked
		// up: the first one wins.
		wSecretInsert: prep(s.w, "INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING"),
		wSecret:       prep(s.w, selectSecret),
		// The write transaction (write).
		wBegin:      prep(s.w, "BEGIN IMMEDIATE"),
		wCommit:     prep(s.w, "COMMIT"),
		wRollback:   prep(s.w, "ROLLBACK"),
		rByID:       prep(s.r, selectRecord+"WHERE id = ?"),
		rPending:    prep(s.r, selectRecord+"WHERE status = 'pending' ORDER BY created_at, id"),
		rSecret:     prep(s.r, selectSecret),
		rEvents:     prep(s.r, selectEvent+"WHERE ask_id = ? ORDER BY seq"),
		rFeed:       prep(s.r, selectEvent+"WHERE seq > ? ORDER BY seq LIMIT ?"),
		rAnyDue:     prep(s.r, "SELECT 1 FROM asks WHERE wake_at IS NOT NULL AND wake_at <= ? LIMIT 1"),
		rInstallFor: prep(s.r, selectInstall+installForWhere),
	}
	return errors.Join(errs...)
}

func (st *statements) close() {
	for _, s := range []*sql.Stmt{
		st.wByID, st.wVersion, st.wByKey, st.wExists, st.wInsert, st.wUpdate, st.wUpdateRecord, st.wDelete, st.wPrune,
		st.wSecretInsert, st.wSecret, st.wDue, st.wClaim, st.wLease, st.wLeaseSet, st.wLeaseDel,
		st.wBegin, st.wCommit, st.wRollback,
		st.wEvent, st.wDeleteEvents, st.wPruneEvents,
		st.rByID, st.rPending, st.rSecret, st.rEvents, st.rFeed, st.rAnyDue, st.rInstallFor,
	} {
		if s != nil {
			_ = s.Close()
		}
	}
}

var _ store.Store = (*Store)(nil)

// Open opens the database at path, creating the file if needed, and brings
// its schema up to date. The path is a file name, not a URI; ":memory:" is
// refused (use store/memory). A file whose schema is newer than this build
// knows fails with an error matching ErrSchemaTooNew; a SQLite file that is
// not a slackask database fails with ErrNotSlackask.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := options{busyTimeout: 5 * time.Second, maxReaders: 4}
	for _, opt := range opts {
		opt(&o)
	}
	op := fmt.Sprintf("sqlite open %s", path)
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, store.WrapErr(ctx, op, errors.New("want the path of a database file (for a store in memory, use store/memory)"))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	lock, err := lockFile(abs)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	s, err := open(ctx, abs, o)
	if err != nil {
		_ = lock.Close()
		return nil, store.WrapErr(ctx, op, err)
	}
	s.lock = lock
	go s.checkpoints()
	return s, nil
}

// open opens the connections of the Store on the file abs, whose lock the
// caller holds.
func open(ctx context.Context, abs string, o options) (*Store, error) {
	busy := strconv.FormatInt(o.busyTimeout.Milliseconds(), 10)
	syncMode := "NORMAL"
	if o.syncFull {
		syncMode = "FULL"
	}
	w, err := sql.Open("sqlite", dsn(abs, url.Values{
		"_busy_timeout": {busy},
		"_foreign_keys": {"1"},
		"_journal_mode": {"WAL"},
		"_synchronous":  {syncMode},
		"_txlock":       {"immediate"},             // BeginTx issues BEGIN IMMEDIATE
		"_pragma":       {"wal_autocheckpoint(0)"}, // see checkpointEvery
	}))
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := migrate(ctx, w); err != nil {
		_ = w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", dsn(abs, url.Values{
		"_busy_timeout": {busy},
		"_query_only":   {"1"},
	}))
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(o.maxReaders)
	r.SetMaxIdleConns(o.maxReaders)
	ck, err := sql.Open("sqlite", dsn(abs, url.Values{"_busy_timeout": {busy}}))
	if err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, err
	}
	ck.SetMaxOpenConns(1)
	s := &Store{path: abs, w: w, r: r, ck: ck, stopCk: make(chan struct{}), ckDone: make(chan struct{}), wrote: make(chan struct{}, 1)}
	if err := s.prepare(ctx); err != nil {
		s.st.close()
		_ = errors.Join(ck.Close(), r.Close(), w.Close())
		return nil, err
	}
	return s, nil
}

// checkpoints copies the WAL into the database file when the writer is
// idle or the WAL is long (see checkpointIdle), until Close. It polls
// only while commits are left to copy.
func (s *Store) checkpoints() {
	defer close(s.ckDone)
	t := time.NewTimer(checkpointPoll)
	defer t.Stop()
	var done int64
	for {
		if s.writes.Load() == done {
			// Every commit copied: wait for the next. A commit after
			// this look finds s.wrote empty (drained here) and fills it.
			select {
			case <-s.stopCk:
				return
			case <-s.wrote:
			}
		}
		t.Reset(checkpointPoll)
		select {
		case <-s.stopCk:
			return
		case <-t.C:
		}
		s.ckPolls.Add(1)
		n := s.writes.Load()
		idle := time.Since(time.Unix(0, s.lastWrite.Load())) >= checkpointIdle
		if n != done && (idle || n-done >= checkpointMaxWrites) {
			// A failure is retried at the next tick; the WAL keeps the data.
			if _, err := s.ck.Exec("PRAGMA wal_checkpoint(PASSIVE)"); err == nil {
				done = n
				s.checkpointed.Store(n)
			}
		}
	}
}

// dsn is a file: URI for modernc.org/sqlite: the path escaped, the driver's
// parameters in the query.
func dsn(abs string, q url.Values) string {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

var errClosed = interaction.Errorf(interaction.Internal, "sqlite store: closed")

// check fails calls on a closed store and with a done context.
func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}

// write runs fn in one transaction on the write connection and commits
// when fn returns nil. fn runs its statements on the prepared w*
// statements: the write pool has exactly one connection and wmu is held
// from BEGIN to COMMIT, so they run on that connection, inside the
// transaction. The transaction is the connection's own (prepared BEGIN
// IMMEDIATE and COMMIT), not database/sql's Tx: a Tx costs a context, a
// goroutine, and a parse of BEGIN and of COMMIT per write.
// The changes fn records with changed reach the watchers once the
// transaction committed.
func (s *Store) write(ctx context.Context, fn func() error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.changes = s.changes[:0]
	if _, err := s.st.wBegin.ExecContext(ctx); err != nil {
		return err
	}
	committed := false
	defer func() {
		if !committed {
			// Whatever of fn ran is undone, also when fn panicked, so
			// that the next BEGIN finds no transaction open. An error
			// here means SQLite ended the transaction itself.
			_, _ = s.st.wRollback.ExecContext(context.WithoutCancel(ctx))
		}
	}()
	if err := fn(); err != nil {
		return err
	}
	// COMMIT is not interrupted: a caller giving up now would leave it
	// unknown whether the write stayed.
	if _, err := s.st.wCommit.ExecContext(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	committed = true
	s.lastWrite.Store(time.Now().UnixNano())
	s.writes.Add(1)
	select {
	case s.wrote <- struct{}{}:
	default: // the checkpointer has yet to look at an earlier one
	}
	for _, c := range s.changes {
		if c.Deleted {
			s.records.drop(c.ID)
		}
		s.hub.Publish(c)
	}
	return nil
}

// changed records, inside write's fn, a change to publish after the commit.
func (s *Store) changed(id string, version int64, status interaction.Status, deleted bool) {
	s.changes = append(s.changes, store.Change{ID: id, Version: version, Status: status, Deleted: deleted})
}

type scanner = sqlrow.Scanner

func nullNanos(t *time.Time) any {
	if t == nil {
		return nil
	}
	return sqlrow.Nanos(*t)
}

func nullZeroNanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return sqlrow.Nanos(t)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, r store.Record) (store.Record, bool, error) {
	op := fmt.Sprintf("sqlite create %q", r.ID)
	if err := s.check(ctx); err != nil {
		return store.Record{}, false, store.WrapErr(ctx, op, err)
	}
	r = store.Clone(r)
	r.Version = 1
	evs, err := store.TakeEvents(&r)
	if err != nil {
		return store.Record{}, false, store.WrapErr(ctx, op, err)
	}
	data, err := store.Encode(r)
	if err != nil {
		return store.Record{}, false, store.WrapErr(ctx, op, err)
	}
	var (
		existing store.Record
		found    bool
	)
	err = s.write(ctx, func() error {
		if r.IdempotencyKey != "" {
			rec, err := sqlrow.Record(s.st.wByKey.QueryRowContext(ctx, r.IdempotencyKey))
			switch {
			case err == nil:
				existing, found = rec, true
				return nil
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		var one int
		switch err := s.st.wExists.QueryRowContext(ctx, r.ID).Scan(&one); {
		case err == nil:
			return store.ErrExists
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err := s.st.wInsert.ExecContext(ctx,
			r.ID, string(r.Status), sqlrow.Nanos(r.CreatedAt), nullNanos(r.EndedAt), nullString(r.IdempotencyKey),
			boolInt(r.Synced), nullZeroNanos(r.RemindAt), nullZeroNanos(r.WakeAt), r.Version, data, nullString(r.Owner))
		if err == nil {
			err = s.writeEvents(ctx, evs)
		}
		if err == nil {
			s.changed(r.ID, r.Version, r.Status, false)
		}
		return err
	})
	if err != nil {
		return store.Record{}, false, store.WrapErr(ctx, op, err)
	}
	if found {
		return existing, false, nil
	}
	s.records.put(r)
	return r, true, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Record, error) {
	op := fmt.Sprintf("sqlite get %q", id)
	if err := s.check(ctx); err != nil {
		return store.Record{}, store.WrapErr(ctx, op, err)
	}
	r, err := sqlrow.Record(s.st.rByID.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Record{}, store.WrapErr(ctx, op, err)
	}
	return r, nil
}

// Update implements store.Store. fn runs inside the write transaction: it
// must not call the store's write methods (they would wait for it), and it
// holds up every other writer while it runs.
func (s *Store) Update(ctx context.Context, id string, fn func(*store.Record) error) (store.Record, error) {
	op := store.UpdateOp{Ctx: ctx, ID: id, Fn: fn}
	s.UpdateBatch([]*store.UpdateOp{&op})
	return op.Rec, op.Err
}

// UpdateBatch implements store.Batcher: the ops run in one write
// transaction, each as Update. A transaction's own work (the locks of the
// WAL index, the commit's append) costs more than a record's update, so
// updates that queued behind each other share one.
func (s *Store) UpdateBatch(ops []*store.UpdateOp) {
	var todo []*store.UpdateOp
	for _, op := range ops {
		if err := s.check(op.Ctx); err != nil {
			op.Rec, op.Err = store.Record{}, store.WrapErr(op.Ctx, updateOp(op.ID), err)
			continue
		}
		todo = append(todo, op)
	}
	if len(todo) == 0 {
		return
	}
	// The transaction is every op's, and so are its statements: one
	// caller giving up must not interrupt a statement, which would roll
	// back the others' writes. An op whose ctx is done before its turn is
	// skipped; once begun (microseconds) it is finished.
	ctx := context.WithoutCancel(todo[0].Ctx)
	var (
		latest map[string]store.Record // each id as the ops wrote it
		failed *store.UpdateOp         // the op whose statement failed
	)
	err := s.write(ctx, func() error {
		for _, op := range todo {
			if err := op.Ctx.Err(); err != nil {
				op.Err = store.WrapErr(op.Ctx, updateOp(op.ID), err)
				continue
			}
			cur, ok := latest[op.ID]
			if !ok {
				var err error
				if cur, err = s.current(ctx, op.ID); errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrCorrupt) {
					op.Err = store.WrapErr(op.Ctx, updateOp(op.ID), err) // this op's alone: the others go on
					continue
				} else if err != nil {
					failed = op
					return err
				}
			}
			// cur is a copy of its own: shares nothing with anyone.
			next, evs, fnErr, err := store.Apply(cur, op.Fn)
			if fnErr != nil {
				op.Err = fnErr // as is; nothing of op was written
				continue
			}
			if err != nil {
				op.Err = store.WrapErr(op.Ctx, updateOp(op.ID), err) // nothing of op was written
				continue
			}
			if err := s.writeRecord(ctx, cur, next); err != nil {
				failed = op
				return err
			}
			if err := s.writeEvents(ctx, evs); err != nil {
				failed = op
				return err
			}
			if latest == nil {
				latest = map[string]store.Record{}
			}
			latest[op.ID] = next
			// Fn may keep the pointer it was given: return a copy of our own.
			op.Rec = store.Clone(next)
			if !next.Quiet {
				s.changed(next.ID, next.Version, next.Status, false)
			}
		}
		return nil
	})
	if err != nil {
		// Nothing was written: every op that was to be fails with it.
		for _, op := range todo {
			if op.Err == nil || op == failed {
				op.Rec, op.Err = store.Record{}, store.WrapErr(op.Ctx, updateOp(op.ID), err)
			}
		}
		return
	}
	for _, r := range latest {
		s.records.put(r)
	}
}

func updateOp(id string) string { return fmt.Sprintf("sqlite update %q", id) }

// writeRecord writes next over cur, a compare-and-set on cur's version.
func (s *Store) writeRecord(ctx context.Context, cur, next store.Record) error {
	data, err := store.Encode(next)
	if err != nil {
		return err
	}
	var res sql.Result
	if sameIndexedColumns(cur, next) {
		res, err = s.st.wUpdateRecord.ExecContext(ctx, next.Version, data, cur.ID, cur.Version)
	} else {
		res, err = s.st.wUpdate.ExecContext(ctx,
			string(next.Status), sqlrow.Nanos(next.CreatedAt), nullNanos(next.EndedAt), boolInt(next.Synced),
			nullZeroNanos(next.RemindAt), nullZeroNanos(next.WakeAt), next.Version, data, cur.ID, cur.Version)
	}
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		return store.Internal(nil, "compare-and-set of version %d matched %d rows", cur.Version, n)
	}
	return nil
}

// writeEvents appends evs to the events log, inside the write
// transaction. The write connection is the only writer of the file, so
// seqs are given out (and committed) in order.
func (s *Store) writeEvents(ctx context.Context, evs []store.Event) error {
	for _, e := range evs {
		by, err := store.EncodeUser(e.By)
		if err != nil {
			return err
		}
		var data any
		if len(e.Data) > 0 {
			data = string(e.Data)
		}
		if _, err := s.st.wEvent.ExecContext(ctx, e.AskID, sqlrow.Nanos(e.At), e.Kind, nullString(by), data); err != nil {
			return err
		}
	}
	return nil
}

// events runs st (of selectEvent) and returns its events.
func (s *Store) events(ctx context.Context, op string, st *sql.Stmt, args ...any) ([]store.Event, error) {
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	defer rows.Close()
	out, err := store.ScanEvents(rows)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	return out, nil
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, id string) ([]store.Event, error) {
	return s.events(ctx, fmt.Sprintf("sqlite events %q", id), s.st.rEvents, id)
}

// Feed implements store.Store. Writers commit one at a time, each with
// seqs above every committed one, so a read never sees a seq whose
// predecessors are not all visible.
func (s *Store) Feed(ctx context.Context, after int64, limit int) ([]store.Event, error) {
	return s.events(ctx, "sqlite feed", s.st.rFeed, after, store.FeedLimit(limit))
}

// current returns the record id as it is in the database, inside the
// write transaction; store.ErrNotFound when there is no such row. The
// record this Store last wrote for id is used when the row still has its
// version (recordCache); else the row is read and decoded.
func (s *Store) current(ctx context.Context, id string) (store.Record, error) {
	if r, ok := s.records.get(id); ok {
		var v int64
		err := s.st.wVersion.QueryRowContext(ctx, id).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return store.Record{}, store.ErrNotFound
		}
		if err != nil {
			return store.Record{}, err
		}
		if v == r.Version {
			return r, nil
		}
	}
	r, err := sqlrow.Record(s.st.wByID.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Record{}, store.ErrNotFound
	}
	return r, err
}

// sameIndexedColumns reports whether a and b agree on every column besides
// the record that an index or a query reads.
func sameIndexedColumns(a, b store.Record) bool {
	return a.Status == b.Status && sqlrow.Nanos(a.CreatedAt) == sqlrow.Nanos(b.CreatedAt) &&
		nullNanos(a.EndedAt) == nullNanos(b.EndedAt) && a.Synced == b.Synced &&
		nullZeroNanos(a.RemindAt) == nullZeroNanos(b.RemindAt) && nullZeroNanos(a.WakeAt) == nullZeroNanos(b.WakeAt)
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, id string) error {
	op := fmt.Sprintf("sqlite delete %q", id)
	if err := s.check(ctx); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	err := s.write(ctx, func() error {
		var (
			version int64
			status  string
		)
		err := s.st.wDelete.QueryRowContext(ctx, id).Scan(&version, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err == nil {
			_, err = s.st.wDeleteEvents.ExecContext(ctx, id)
		}
		if err == nil {
			s.changed(id, version, interaction.Status(status), true)
		}
		return err
	})
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	return nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, f store.Filter) ([]store.Record, error) {
	const op = "sqlite list"
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	var (
		where []string
		args  []any
	)
	if f.Status != "" {
		where, args = append(where, "status = ?"), append(args, string(f.Status))
	}
	if !f.Before.IsZero() {
		where, args = append(where, "created_at < ?"), append(args, sqlrow.Nanos(f.Before))
	}
	if f.Unsynced {
		where = append(where, "synced = 0 AND status <> 'pending'")
	}
	if f.Owner != "" {
		where, args = append(where, "owner = ?"), append(args, f.Owner)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := selectRecord
	if len(where) > 0 {
		q += "WHERE " + strings.Join(where, " AND ") + " "
	}
	q += "ORDER BY created_at DESC, id DESC LIMIT ?"
	rows, err := s.r.QueryContext(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	rs, err := scanRecords(rows)
	if err != nil {
		return rs, store.WrapErr(ctx, op, err) // rs: the rows that decode, beside a *store.CorruptError
	}
	return rs, nil
}

// Pending implements store.Store.
func (s *Store) Pending(ctx context.Context) ([]store.Record, error) {
	const op = "sqlite pending"
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	rows, err := s.st.rPending.QueryContext(ctx)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	rs, err := scanRecords(rows)
	if err != nil {
		return rs, store.WrapErr(ctx, op, err) // rs: the rows that decode, beside a *store.CorruptError
	}
	return rs, nil
}

// Queue implements store.Store.
func (s *Store) Queue(ctx context.Context, name string, limit int) ([]string, error) {
	const op = "sqlite queue"
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	if limit <= 0 || name == "" {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, "SELECT id FROM asks WHERE post_queue = ? AND status = 'pending' ORDER BY created_at, id LIMIT ?", name, limit)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	ids, err := scanIDs(rows)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	return ids, nil
}

func scanIDs(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

func scanRecords(rows *sql.Rows) ([]store.Record, error) {
	defer rows.Close()
	return sqlrow.Records(rows)
}

// Prune implements store.Store.
func (s *Store) Prune(ctx context.Context, t time.Time) (int, error) {
	const op = "sqlite prune"
	if err := s.check(ctx); err != nil {
		return 0, store.WrapErr(ctx, op, err)
	}
	n := 0
	err := s.write(ctx, func() error {
		n = 0
		if _, err := s.st.wPruneEvents.ExecContext(ctx, sqlrow.Nanos(t)); err != nil {
			return err
		}
		rows, err := s.st.wPrune.QueryContext(ctx, sqlrow.Nanos(t))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				id, status string
				version    int64
			)
			if err := rows.Scan(&id, &version, &status); err != nil {
				return err
			}
			s.changed(id, version, interaction.Status(status), true)
			n++
		}
		return rows.Err()
	})
	if err != nil {
		return 0, store.WrapErr(ctx, op, err)
	}
	return n, nil
}

// secretLen is the size of every secret.
const secretLen = 32

// Secret implements store.Store.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	op := fmt.Sprintf("sqlite secret %q", name)
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	var k []byte
	err := s.st.rSecret.QueryRowContext(ctx, name).Scan(&k)
	if errors.Is(err, sql.ErrNoRows) {
		fresh := make([]byte, secretLen)
		_, _ = rand.Read(fresh) // never fails (crypto/rand)
		err = s.write(ctx, func() error {
			if _, err := s.st.wSecretInsert.ExecContext(ctx, name, fresh, time.Now().UnixNano()); err != nil {
				return err
			}
			return s.st.wSecret.QueryRowContext(ctx, name).Scan(&k)
		})
	}
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	if len(k) != secretLen {
		return nil, store.WrapErr(ctx, op, store.Internal(nil, "corrupt secret: %d bytes, want %d", len(k), secretLen))
	}
	return k, nil
}

// ClaimDue implements store.Store. A look on the read pool comes first:
// with nothing due (a dispatcher's idle poll, every 0.5 s) it takes no
// write lock and commits nothing, so the checkpointer sleeps on.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Record, error) {
	const op = "sqlite claim due"
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	if limit <= 0 {
		return nil, nil
	}
	var one int
	switch err := s.st.rAnyDue.QueryRowContext(ctx, sqlrow.Nanos(now)).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, store.WrapErr(ctx, op, err)
	}
	wake := time.Unix(0, sqlrow.Nanos(now.Add(lease)))
	var (
		out     []store.Record
		corrupt *store.CorruptError
	)
	err := s.write(ctx, func() error {
		rows, err := s.st.wDue.QueryContext(ctx, sqlrow.Nanos(now), limit)
		if err != nil {
			return err
		}
		if out, err = scanRecords(rows); err != nil && !errors.As(err, &corrupt) {
			return err
		}
		for i := range out {
			if _, err := s.st.wClaim.ExecContext(ctx, sqlrow.Nanos(wake), out[i].ID); err != nil {
				return err
			}
			out[i].WakeAt = wake
			out[i].Version++
			s.changed(out[i].ID, out[i].Version, out[i].Status, false)
		}
		if corrupt != nil {
			for _, id := range corrupt.IDs {
				// Claimed like the rest, so that it comes back once a
				// lease; no watcher can read it, so none is told.
				if _, err := s.st.wClaim.ExecContext(ctx, sqlrow.Nanos(wake), id); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	if corrupt != nil {
		return out, store.WrapErr(ctx, op, corrupt)
	}
	return out, nil
}

// Watch implements store.Store. It sees the writes of this Store, which is
// the only one on its file.
func (s *Store) Watch(fn func(store.Change)) (stop func()) { return s.hub.Watch(fn) }

// Lease implements store.Store. Expiry is judged by this process's clock.
func (s *Store) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	op := fmt.Sprintf("sqlite lease %q", name)
	if err := s.check(ctx); err != nil {
		return false, store.WrapErr(ctx, op, err)
	}
	held := false
	err := s.write(ctx, func() error {
		if ttl <= 0 {
			_, err := s.st.wLeaseDel.ExecContext(ctx, name, holder)
			return err
		}
		now := time.Now()
		var (
			cur     string
			expires int64
		)
		err := s.st.wLease.QueryRowContext(ctx, name).Scan(&cur, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case cur != holder && sqlrow.Nanos(now) < expires:
			return nil
		}
		if _, err := s.st.wLeaseSet.ExecContext(ctx, name, holder, sqlrow.Nanos(now.Add(ttl))); err != nil {
			return err
		}
		held = true
		return nil
	})
	if err != nil {
		return false, store.WrapErr(ctx, op, err)
	}
	return held, nil
}

// Close closes the database and stops every watcher; calls after Close
// fail. A second Close does nothing.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(s.stopCk)
	<-s.ckDone
	s.hub.Close()
	s.st.close()
	// The write connection closes last: as the last connection it
	// checkpoints the WAL into the database file. The file lock goes after
	// it, once nothing of this Store touches the file.
	err := errors.Join(s.ck.Close(), s.r.Close(), s.w.Close())
	err = errors.Join(err, s.lock.Close())
	if err != nil {
		return store.WrapErr(context.Background(), "sqlite close", err)
	}
	return nil
}
