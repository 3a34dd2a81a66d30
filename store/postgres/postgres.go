// Package postgres is the store.Store for several slackask replicas on one
// PostgreSQL database (github.com/jackc/pgx/v5).
//
// # Layout
//
// As in store/sqlite, each ask is one row of the asks table: the whole
// store.Record as JSONB, plus copies of the fields that are queried
// (status, created_at, ended_at, idempotency_key, synced, remind_at,
// wake_at, version) in indexed columns; version and wake_at are
// authoritative, so that ClaimDue moves them without rewriting the JSON.
// Times are bigint unix nanoseconds. The events an ask's writes emit
// (store.Event) are rows of the events table, inserted in the
// transaction of the write, their seqs from a counter whose lock orders
// their commits (eventsCTE). The tables live in one schema: the
// connection's current schema (search_path=… in the URL), or the one
// WithSchema names. The numbered SQL files embedded from migrations/ create
// and upgrade it (see migrate.go).
//
// # Several processes
//
// Every write is one statement or one transaction, so any number of Stores
// on the database, in any number of processes, share it safely: Update
// either writes in one statement that matches only the row version it
// last wrote itself (version and xmin) or locks the row (SELECT … FOR
// UPDATE) for the read, fn and the write, so concurrent updates of one
// record serialise and none is lost; Create
// relies on the UNIQUE idempotency key, so two replicas given one key at
// once make one record; ClaimDue takes its rows with FOR UPDATE SKIP
// LOCKED; Lease compares with the database's clock. Each Store holds a
// pgxpool (pool_max_conns=… in the URL sizes it; pgx's default is 4 or the
// number of CPUs) plus its LISTEN connection.
//
// # Watch
//
// A trigger on asks calls pg_notify in the writing transaction, so a
// notification is sent exactly when a write commits, whichever Store made
// it. Each Store keeps one connection that LISTENs on its schema's channel
// and hands what it hears to its watchers. When that connection is lost,
// it reconnects with backoff and then sends the watchers a Resync change,
// since notifications sent meanwhile are gone. The same connection hears
// the acks replicas relay to each other (store.AckRelay, relay.go).
package postgres

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/internal/reccache"
	"github.com/slackask/slackask/store/internal/sqlrow"
	"github.com/slackask/slackask/store/internal/watch"
)

// Option changes how Open opens the database.
type Option func(*options)

type options struct {
	schema string
}

// WithSchema keeps the tables in the named schema, created if it does not
// exist, instead of the connection's current schema.
func WithSchema(name string) Option {
	return func(o *options) { o.schema = name }
}

// Store is a store.Store on a PostgreSQL database. It is safe for
// concurrent use, also with other Stores on the same schema.
type Store struct {
	pool    *pgxpool.Pool
	schema  string
	channel string
	hub     watch.Hub
	// ackChannel and acks: relayed acks (relay.go), heard on the same
	// LISTEN connection.
	ackChannel string
	acks       watch.Acks
	closed     atomic.Bool

	listenCfg  *pgx.ConnConfig
	trips      *tripCounter // the pool's round trips (trips.go)
	pingMu     sync.Mutex
	pingConn   *pgx.Conn // Ping's connection; nil until the first Ping, and after a failed one
	stopListen context.CancelFunc
	listenDone chan struct{}
	listenPID  atomic.Uint32 // backend pid of the LISTEN connection, 0 while none
	// records: what this Store last wrote (or claimed) per id, tagged with
	// the row's xmin and loud_xmin (rowTag), for Update's one statement.
	records reccache.Cache[rowTag]
}

var _ store.Store = (*Store)(nil)

// recordCacheSize bounds the records Update keeps (Store.records). Larger
// than SQLite's (reccache.Size): here a record not kept costs a locked read
// on the server, there only a decode. 1,024 records of about 3 KB each
// (storetest.BenchRecord decoded) are 3 MB of heap.
const recordCacheSize = 1024

// The listen connection is made again after a loss, waiting between tries
// from reconnectMin, doubling up to reconnectMax (jittered).
const (
	reconnectMin = 50 * time.Millisecond
	reconnectMax = 5 * time.Second
)

// idleTxTimeout is how long the server lets a connection of the store sit
// in a transaction without a statement before it ends the session (and
// its transaction), unless the URL sets idle_in_transaction_session_timeout.
// A write that emits events holds the one counter row of the events log
// (eventsCTE) from its last statement to COMMIT, sent together; were a
// replica cut off from the database between the two (a partition, not a
// closed socket, which the server notices at once), every replica's
// writes with events would wait for it until TCP gave up. A store's
// transactions idle only while Update's fn runs, in memory.
const (
	idleTxParam   = "idle_in_transaction_session_timeout"
	idleTxTimeout = 15 * time.Second
)

// IsURL reports whether s is a PostgreSQL URL (postgres:// or
// postgresql://), which Open accepts.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Open connects to the database at rawURL (postgres:// or postgresql://,
// with pgx's parameters; search_path=… picks the schema), brings the schema
// up to date and starts listening for changes. It returns once the LISTEN
// connection is up, so that Watch misses no write committed after Open.
// A schema migrated by a newer slackask fails with an error matching
// ErrSchemaTooNew. Errors never show the URL's password.
func Open(ctx context.Context, rawURL string, opts ...Option) (*Store, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	const op = "postgres open"
	if !IsURL(rawURL) {
		return nil, store.WrapErr(ctx, op, errors.New("want a postgres:// or postgresql:// URL"))
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// pgx's message may quote the URL: keep only that it failed.
		return nil, store.WrapErr(ctx, op, errors.New("the URL does not parse as a PostgreSQL connection string"))
	}
	if o.schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{o.schema}.Sanitize()
	}
	if _, set := cfg.ConnConfig.RuntimeParams[idleTxParam]; !set {
		cfg.ConnConfig.RuntimeParams[idleTxParam] = strconv.FormatInt(idleTxTimeout.Milliseconds(), 10)
	}
	listenCfg := cfg.ConnConfig.Copy() // without the pool's tracer
	trips := &tripCounter{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		pool.Close()
		return nil, store.WrapErr(ctx, op, fmt.Errorf("connect to %s: %w", redact(rawURL), err))
	}
	schema, err := migrate(ctx, conn.Conn(), o.schema)
	conn.Release()
	if err != nil {
		pool.Close()
		return nil, store.WrapErr(ctx, op, err)
	}
	lctx, stop := context.WithCancel(context.Background())
	s := &Store{
		pool:       pool,
		schema:     schema,
		channel:    notifyChannel(schema),
		ackChannel: ackChannel(schema),
		listenCfg:  listenCfg,
		trips:      trips,
		records:    reccache.Cache[rowTag]{Max: recordCacheSize},
		stopListen: stop,
		listenDone: make(chan struct{}),
	}
	ready := make(chan error, 1)
	go s.listen(lctx, ready)
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		stop()
		<-s.listenDone
		pool.Close()
		return nil, store.WrapErr(ctx, op, fmt.Errorf("listen: %w", err))
	}
	return s, nil
}

// notifyChannel is the channel the asks trigger of schema notifies: as in
// the trigger, "slackask_" and the first 20 hex digits of md5(schema),
// short enough for any schema name.
func notifyChannel(schema string) string { return schemaChannel("slackask_", schema) }

// schemaChannel is prefix and the first 20 hex digits of md5(schema): a
// channel name of schema's own, within PostgreSQL's 63-byte identifiers.
func schemaChannel(prefix, schema string) string {
	sum := md5.Sum([]byte(schema))
	return prefix + hex.EncodeToString(sum[:])[:20]
}

// redact is rawURL without its password, for messages.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "the database"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "redacted")
	}
	u.RawQuery = ""
	return u.String()
}

// Schema returns the name of the schema holding the tables.
func (s *Store) Schema() string { return s.schema }

// listen keeps a connection LISTENing on s.channel until ctx ends and
// publishes what it hears. The first connection's outcome goes to ready;
// after that, a lost connection is made again with backoff and followed by
// a Resync change.
func (s *Store) listen(ctx context.Context, ready chan<- error) {
	defer close(s.listenDone)
	first := true
	pause := backoff.Backoff{Min: reconnectMin, Max: reconnectMax}
	for {
		var conn *pgx.Conn
		err := backoff.Retry{Pause: &pause}.Do(ctx, func(int) error {
			var err error
			conn, err = pgx.ConnectConfig(ctx, s.listenCfg.Copy())
			if err == nil {
				if _, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()+"; LISTEN "+pgx.Identifier{s.ackChannel}.Sanitize()); err != nil {
					_ = conn.Close(context.Background())
				}
			}
			if err != nil && first {
				return backoff.Stop(err)
			}
			return err
		})
		if err != nil {
			if first {
				ready <- err
			}
			return
		}
		s.listenPID.Store(conn.PgConn().PID())
		if first {
			first = false
			ready <- nil
		} else {
			s.records.Clear() // writes were missed: no entry is known current
			s.hub.Publish(store.Change{Resync: true})
		}
		pause.Reset()
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				break
			}
			if n.Channel == s.ackChannel {
				s.publishAck(n.Payload)
			} else if c, ok := parseNotification(n.Payload); ok {
				if c.Deleted {
					s.records.Drop(c.ID)
				} else {
					s.records.DropOlder(c.ID, c.Version) // written elsewhere
				}
				s.hub.Publish(c)
			}
		}
		s.listenPID.Store(0)
		_ = conn.Close(context.Background())
		if ctx.Err() != nil {
			return
		}
	}
}

// parseNotification decodes the trigger's payload; ok is false for one it
// did not write.
func parseNotification(payload string) (store.Change, bool) {
	var p struct {
		ID      string `json:"id"`
		Version int64  `json:"v"`
		Status  string `json:"s"`
		Deleted bool   `json:"d"`
	}
	if err := json.Unmarshal([]byte(payload), &p); err != nil || p.ID == "" {
		return store.Change{}, false
	}
	return store.Change{ID: p.ID, Version: p.Version, Status: interaction.Status(p.Status), Deleted: p.Deleted}, true
}

var errClosed = interaction.Errorf(interaction.Internal, "postgres store: closed")

// check fails calls on a closed store and with a done context.
func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return errClosed
	}
	return ctx.Err()
}

const selectRecord = "SELECT id, version, wake_at, record FROM asks "

func scanRecords(rows pgx.Rows) ([]store.Record, error) {
	defer rows.Close()
	return sqlrow.Records(rows)
}

func nullNanos(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	n := sqlrow.Nanos(*t)
	return &n
}

func nullZeroNanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := sqlrow.Nanos(t)
	return &n
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Create implements store.Store. The insert skips any conflict; a skipped
// one is then told apart: the idempotency key's record if there is one,
// else a taken id. An insert that conflicts with one in flight waits for it
// to commit, so two Creates with one key make one record.
func (s *Store) Create(ctx context.Context, r store.Record) (store.Record, bool, error) {
	op := fmt.Sprintf("postgres create %q", r.ID)
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
	// The statement returns the new row's xmin (NULL when nothing was
	// inserted) and loud_xmin, the tags Update's statement checks.
	q := insertAsk + " RETURNING xmin::text AS x, loud_xmin::text AS l) SELECT x, l FROM (SELECT 1) one LEFT JOIN ins ON true"
	args := []any{r.ID, string(r.Status), sqlrow.Nanos(r.CreatedAt), nullNanos(r.EndedAt), nullString(r.IdempotencyKey),
		r.Synced, nullZeroNanos(r.RemindAt), nullZeroNanos(r.WakeAt), r.Version, data, nullString(r.Owner)}
	if len(evs) > 0 {
		// One statement: the events are inserted iff the ask is.
		q = insertAsk + " RETURNING xmin::text AS x, loud_xmin::text AS l), " + eventsCTE(len(args), "WHERE EXISTS (SELECT FROM ins)") +
			" SELECT x, l FROM (SELECT 1) one LEFT JOIN ins ON true"
		args = append(args, eventArgs(evs)...)
	}
	// A conflict on the key whose record is deleted before it is read
	// freed the key: insert again.
	for range 10 {
		var xmin, loud *string
		if err := s.pool.QueryRow(ctx, q, args...).Scan(&xmin, &loud); err != nil {
			return store.Record{}, false, store.WrapErr(ctx, op, err)
		}
		if xmin != nil {
			s.records.Put(r, rowTag{xmin: *xmin, loud: deref(loud)})
			return r, true, nil
		}
		if r.IdempotencyKey == "" {
			return store.Record{}, false, store.WrapErr(ctx, op, store.ErrExists)
		}
		existing, err := sqlrow.Record(s.pool.QueryRow(ctx, selectRecord+"WHERE idempotency_key = $1", r.IdempotencyKey))
		switch {
		case err == nil:
			return existing, false, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return store.Record{}, false, store.WrapErr(ctx, op, err)
		}
		var taken bool
		if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM asks WHERE id = $1)", r.ID).Scan(&taken); err != nil {
			return store.Record{}, false, store.WrapErr(ctx, op, err)
		}
		if taken {
			return store.Record{}, false, store.WrapErr(ctx, op, store.ErrExists)
		}
	}
	return store.Record{}, false, store.WrapErr(ctx, op, store.Internal(nil, "idempotency key %q: conflicting writes kept the insert from settling", r.IdempotencyKey))
}

// insertAsk starts Create's statement: the insert of the ask as CTE ins,
// skipping any conflict.
const insertAsk = `WITH ins AS (INSERT INTO asks
	(id, status, created_at, ended_at, idempotency_key, synced, remind_at, wake_at, version, record, owner)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT DO NOTHING`

// eventsCTE is the part of a WITH statement that appends events (the
// arguments eventArgs makes, numbered from after+1) to the log: CTE seq
// takes the counter, CTE ev inserts. cond, if not empty, is the WHERE of
// the counter's update: no row, no events.
//
// Why a counter row and not a sequence: a sequence gives out numbers when
// asked, not when the transaction commits, so with several writers (two
// replicas) an event with seq 10 may commit after one with seq 11 was
// already served by the feed, and a reader resuming after 11 never sees
// it. The counter's row lock, taken here, in the last statement before
// COMMIT, is held until the transaction ends, and PostgreSQL makes a
// commit visible before it releases its locks: the next writer gets its
// seqs only once every lower one is visible. A reader that sees seq n
// therefore sees every committed seq below n, and Feed needs no horizon.
// The price: writes that emit events commit one at a time (the lock is
// held for the insert and the commit's WAL flush only; the ask's row lock
// and fn come before it, in parallel).
func eventsCTE(after int, cond string) string {
	p := func(i int) string { return fmt.Sprintf("$%d", after+i) }
	return `seq AS (UPDATE event_seq SET last = last + ` + p(1) + ` ` + cond + ` RETURNING last),
	ev AS (INSERT INTO events (seq, ask_id, at, kind, by_user, data)
		SELECT seq.last - ` + p(1) + ` + e.ord, ` + p(2) + `, e.at, e.kind, e.by_user::json, e.data::json
		FROM seq, unnest(` + p(3) + `::bigint[], ` + p(4) + `::text[], ` + p(5) + `::text[], ` + p(6) + `::text[])
			WITH ORDINALITY AS e(at, kind, by_user, data, ord))`
}

// eventArgs are the arguments of eventsCTE for evs, the events of one ask:
// their count, the ask's id, and one array per column. They were encoded
// by store.TakeEvents; a By that does not encode cannot happen (a struct
// of strings) but is an error all the same.
func eventArgs(evs []store.Event) []any {
	ats := make([]int64, len(evs))
	kinds := make([]string, len(evs))
	bys := make([]*string, len(evs))
	datas := make([]*string, len(evs))
	for i, e := range evs {
		ats[i], kinds[i] = sqlrow.Nanos(e.At), e.Kind
		if by, err := store.EncodeUser(e.By); err == nil && by != "" {
			bys[i] = &by
		}
		if len(e.Data) > 0 {
			d := string(e.Data)
			datas[i] = &d
		}
	}
	return []any{len(evs), evs[0].AskID, ats, kinds, bys, datas}
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Record, error) {
	op := fmt.Sprintf("postgres get %q", id)
	if err := s.check(ctx); err != nil {
		return store.Record{}, store.WrapErr(ctx, op, err)
	}
	r, err := sqlrow.Record(s.pool.QueryRow(ctx, selectRecord+"WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Record{}, store.WrapErr(ctx, op, err)
	}
	return r, nil
}

// Update implements store.Store, in one round trip when this Store's copy
// of the record is current, or when fn writes one pick (merge.go); else in
// two or three.
//
// One: fn runs on the record as this Store last wrote, claimed or read it
// (records), and one statement writes the result only if the row is still
// that version of that row (version and xmin: a row deleted and made again
// has another xmin); the statement is its own transaction. A quiet write
// of one pick is merged into the row instead, on the condition that no
// other kind of write came since the copy (loud_xmin): the row may have
// moved on by other picks. When the row moved on, the same statement
// returns it as it stands (casOrCurrent), and fn runs on that copy in one
// more such statement: two round trips for a copy another replica made
// stale (before its notification arrived, or by a quiet write that the
// copy's next write cannot merge over). fn may run more than once, each
// time on a fresher copy.
//
// Locked: when that misses too (the record is written at the same moment
// elsewhere), or fn refuses a copy (its verdict on a copy not read under
// lock is not trusted), or nothing is cached, the row stays locked (SELECT
// … FOR UPDATE) from the read through fn to the write, in every process:
// fn must not wait for another write of the same record. BEGIN with the
// read, then the write with COMMIT, each pair sent as one pipelined batch.
func (s *Store) Update(ctx context.Context, id string, fn func(*store.Record) error) (store.Record, error) {
	op := updateOp(id)
	if err := s.check(ctx); err != nil {
		return store.Record{}, store.WrapErr(ctx, op, err)
	}
	for range cachedTries {
		cur, tag, ok := s.records.Get(id)
		if !ok {
			break
		}
		out, done, fresh, err := s.updateCached(ctx, cur, tag, fn)
		if err != nil {
			// The statement was sent: whether it committed is unknown, so
			// fn is not tried again.
			return store.Record{}, store.WrapErr(ctx, op, err)
		}
		if done {
			return out, nil
		}
		if !fresh {
			break
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return store.Record{}, store.WrapErr(ctx, op, err)
	}
	// The pool drops a connection that comes back inside a transaction,
	// so an error anywhere below never leaks an open one.
	defer conn.Release()
	out, fnErr, err := s.update(ctx, conn.Conn(), id, fn)
	if err != nil || fnErr != nil {
		// Best effort: a failed rollback leaves the connection to be
		// dropped by Release.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
	if fnErr != nil {
		return store.Record{}, fnErr
	}
	if err != nil {
		return store.Record{}, store.WrapErr(ctx, op, err)
	}
	return out, nil
}

// cachedTries bounds Update's compare-and-sets on copies: the cached one,
// then the one its miss returned. More would only spin against a writer
// as busy as this one; the locked path waits for it instead.
const cachedTries = 2

func updateOp(id string) string { return fmt.Sprintf("postgres update %q", id) }

// updateCached is Update's one statement: fn applied to cur, the record as
// this Store last saw the row (tag), merged into the row as a pick or
// written over that row version. done is false, with nothing written, when
// fn refused cur or the row is no longer what the statement needs; fresh
// then says the row as it stands replaced cur in records. err is an error
// of the statement (its outcome unknown).
func (s *Store) updateCached(ctx context.Context, cur store.Record, tag rowTag, fn func(*store.Record) error) (out store.Record, done, fresh bool, err error) {
	base := store.Clone(cur)
	// An event or encoding error is left to the locked path to report.
	w, fnErr, err := applyFn(&base, cur, fn)
	if fnErr != nil || err != nil {
		return store.Record{}, false, false, nil
	}
	var (
		q    string
		args []any
	)
	p, merge := pickOf(tag, &base, w)
	if merge {
		q, args = mergeStatement(cur.ID, tag.loud, p, false)
		q = "WITH up AS (" + q + returning + mergeOrCurrent
	} else {
		if args, err = w.args(); err != nil {
			return store.Record{}, false, false, nil
		}
		args = append(args, tag.xmin)
		q = "WITH up AS (" + updateAsk + " AND xmin::text = $13" + returning
		if len(w.evs) > 0 {
			// Events iff the row was written; the counter is taken last and
			// held until the statement's commit (eventsCTE).
			q += ", " + eventsCTE(len(args), "WHERE EXISTS (SELECT FROM up)")
			args = append(args, eventArgs(w.evs)...)
		}
		q += casOrCurrent
	}
	c, err := scanCAS(s.pool.QueryRow(ctx, q, args...))
	if err != nil {
		s.records.Drop(cur.ID)
		return store.Record{}, false, false, err
	}
	if !c.wrote {
		return store.Record{}, false, s.keepCurrent(cur.ID, c), nil
	}
	next := w.next
	after := rowTag{xmin: c.xmin, loud: c.loud}
	if merge {
		next.Version = c.version
		if tag.xmin == "" || c.version != base.Version+1 {
			after.xmin = "" // other picks may have been merged since cur
		}
	}
	s.records.Put(next, after)
	// fn may keep the pointer it was given: return a copy of our own.
	return store.Clone(next), true, false, nil
}

// returning ends the CTE up of a casOrCurrent or mergeOrCurrent statement.
const returning = " RETURNING xmin::text AS x, version AS v, loud_xmin::text AS l)"

// orCurrent ends a statement whose CTE up is a write of row id (a
// parameter, such as "$9"; up ending in returning): the statement returns
// the new xmin, version and loud_xmin when it wrote, and otherwise the row
// as it stands with its xmin and loud_xmin (the main query reads the
// snapshot the UPDATE started from), or no row when there is none. Scan
// it with scanCAS. casOrCurrent ends a compare-and-set (row $9),
// mergeOrCurrent a pick merge (row $1).
func orCurrent(id string) string {
	return ` SELECT x, NULL, v, NULL, NULL, l FROM up
	UNION ALL SELECT a.xmin::text, a.id, a.version, a.wake_at, a.record, a.loud_xmin::text FROM asks a
	WHERE a.id = ` + id + ` AND NOT EXISTS (SELECT FROM up)`
}

var casOrCurrent, mergeOrCurrent = orCurrent("$9"), orCurrent("$1")

// casResult is what a casOrCurrent or mergeOrCurrent statement returned.
type casResult struct {
	wrote bool
	// The row's: written, the new ones; else the current row's.
	xmin, loud string
	version    int64         // wrote: the row's new version
	cur        *store.Record // not wrote: the row as it stands; nil when gone or corrupt
}

// scanCAS reads a casOrCurrent or mergeOrCurrent statement's row. A
// current row that does not decode is left out (nil cur): the statement
// wrote nothing, and the locked path reports it.
func scanCAS(row pgx.Row) (casResult, error) {
	var (
		c       casResult
		id      *string
		version *int64
		wake    any
		data    []byte
		loud    *string
	)
	err := row.Scan(&c.xmin, &id, &version, &wake, &data, &loud)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return casResult{}, nil
	case err != nil:
		return casResult{}, err
	}
	if loud != nil {
		c.loud = *loud
	}
	if id == nil {
		c.wrote = true
		if version != nil {
			c.version = *version
		}
		return c, nil
	}
	if r, err := sqlrow.Decode(*id, *version, wake, data); err == nil {
		c.cur = &r
	}
	return c, nil
}

// keepCurrent caches the row a missed compare-and-set on id returned, or
// drops id's copy when it returned none, and says whether it cached one.
func (s *Store) keepCurrent(id string, c casResult) bool {
	if c.cur == nil {
		s.records.Drop(id)
		return false
	}
	s.records.Put(*c.cur, rowTag{xmin: c.xmin, loud: c.loud})
	return true
}

// written is fn's change of a record, ready to write: the next version of
// the record (its keys kept, Version one up) and the events it emitted.
type written struct {
	next store.Record
	evs  []store.Event
	// picks: a quiet write of people's picks alone (pickOf's kind, of any
	// number of entries): the row's loud_xmin stays, so that picks merged
	// elsewhere need no current copy after it.
	picks bool
}

// applyFn runs fn on rec, which the caller gives up (fn changes it in
// place), and readies the write over rec's version; base is a copy of rec
// as it was. fnErr is fn's own error; err an event that does not encode.
func applyFn(base *store.Record, rec store.Record, fn func(*store.Record) error) (w written, fnErr, err error) {
	if w.next, w.evs, fnErr, err = store.Apply(rec, fn); fnErr == nil && err == nil {
		w.picks = w.next.Quiet && sameBesidesPicks(base, &w.next)
	}
	return w, fnErr, err
}

// args are updateAsk's arguments $1–$12: w.next over its previous version.
func (w written) args() ([]any, error) {
	n := w.next
	data, err := store.Encode(n)
	if err != nil {
		return nil, err
	}
	var quietAt *int64 // NULL: the write is announced
	if n.Quiet {
		quietAt = &n.Version
	}
	return []any{string(n.Status), sqlrow.Nanos(n.CreatedAt), nullNanos(n.EndedAt), n.Synced,
		nullZeroNanos(n.RemindAt), nullZeroNanos(n.WakeAt), n.Version, data, n.ID, n.Version - 1, quietAt, w.picks}, nil
}

// updateAsk writes a record over version $10 of row $9. quiet_at = $11,
// the version written when the write goes unannounced (Record.Quiet),
// keeps the asks_notify trigger from firing (0008_quiet_writes.sql). $12
// says it writes picks alone (written.picks): loud_xmin stays; otherwise
// it is this transaction's (0009_pick_merges.sql, whose trigger does the
// same for writes that are not quiet).
const updateAsk = `UPDATE asks SET
		status = $1, created_at = $2, ended_at = $3, synced = $4, remind_at = $5, wake_at = $6, version = $7, record = $8, quiet_at = $11,
		loud_xmin = CASE WHEN $12::boolean THEN loud_xmin ELSE pg_current_xact_id()::xid END
		WHERE id = $9 AND version = $10`

// update runs Update's transaction on conn. fnErr is fn's error, err any
// other; with either, the transaction is left for the caller to roll back.
func (s *Store) update(ctx context.Context, conn *pgx.Conn, id string, fn func(*store.Record) error) (out store.Record, fnErr, err error) {
	read := &pgx.Batch{}
	read.Queue("BEGIN")
	read.Queue(selectRecord+"WHERE id = $1 FOR UPDATE", id)
	br := conn.SendBatch(ctx, read)
	_, err = br.Exec()
	var cur store.Record
	if err == nil {
		cur, err = sqlrow.Record(br.QueryRow())
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return store.Record{}, nil, err
	}
	base := store.Clone(cur)
	w, fnErr, err := applyFn(&base, cur, fn) // cur is read for this Update alone
	if fnErr != nil || err != nil {
		return store.Record{}, fnErr, err
	}
	args, err := w.args()
	if err != nil {
		return store.Record{}, nil, err
	}
	write := &pgx.Batch{}
	write.Queue(updateAsk+" RETURNING xmin::text, loud_xmin::text", args...)
	if len(w.evs) > 0 {
		// The last statement before COMMIT: it holds the counter (see
		// eventsCTE) for as short a time as can be.
		write.Queue("WITH "+eventsCTE(0, "")+" SELECT 1", eventArgs(w.evs)...)
	}
	write.Queue("COMMIT")
	br = conn.SendBatch(ctx, write)
	var xmin, loud *string
	err = br.QueryRow().Scan(&xmin, &loud)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.Internal(nil, "compare-and-set of version %d matched no row", cur.Version)
	}
	if err == nil && len(w.evs) > 0 {
		_, err = br.Exec()
	}
	if err == nil {
		_, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.records.Drop(id)
		return store.Record{}, nil, err
	}
	s.records.Put(w.next, rowTag{xmin: deref(xmin), loud: deref(loud)})
	// fn may keep the pointer it was given: return a copy of our own.
	return store.Clone(w.next), nil, nil
}

// deref is *s, or "" for nil (NULL).
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, id string) error {
	op := fmt.Sprintf("postgres delete %q", id)
	if err := s.check(ctx); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	s.records.Drop(id)
	tag, err := s.pool.Exec(ctx, "DELETE FROM asks WHERE id = $1", id)
	if err != nil {
		return store.WrapErr(ctx, op, err)
	}
	if tag.RowsAffected() == 0 {
		return store.WrapErr(ctx, op, store.ErrNotFound)
	}
	return nil
}

const selectEvent = "SELECT seq, ask_id, at, kind, by_user::text, data::text FROM events "

// events runs query (of selectEvent) and returns its events.
func (s *Store) events(ctx context.Context, op, query string, args ...any) ([]store.Event, error) {
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	rows, err := s.pool.Query(ctx, query, args...)
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
	return s.events(ctx, fmt.Sprintf("postgres events %q", id), selectEvent+"WHERE ask_id = $1 ORDER BY seq", id)
}

// Feed implements store.Store. Writers commit their events in seq order
// (eventsCTE), so one snapshot that holds seq n holds every seq below it:
// the statement's snapshot is the horizon.
func (s *Store) Feed(ctx context.Context, after int64, limit int) ([]store.Event, error) {
	return s.events(ctx, "postgres feed", selectEvent+"WHERE seq > $1 ORDER BY seq LIMIT $2", after, store.FeedLimit(limit))
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, f store.Filter) ([]store.Record, error) {
	const op = "postgres list"
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	var (
		where []string
		args  []any
	)
	if f.Status != "" {
		args = append(args, string(f.Status))
		where = append(where, fmt.Sprintf("status = $%d", len(args)))
	}
	if !f.Before.IsZero() {
		args = append(args, sqlrow.Nanos(f.Before))
		where = append(where, fmt.Sprintf("created_at < $%d", len(args)))
	}
	if f.Unsynced {
		where = append(where, "NOT synced AND status <> 'pending'")
	}
	if f.Owner != "" {
		args = append(args, f.Owner)
		where = append(where, fmt.Sprintf("owner = $%d", len(args)))
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := selectRecord
	if len(where) > 0 {
		q += "WHERE " + strings.Join(where, " AND ") + " "
	}
	args = append(args, limit)
	q += fmt.Sprintf("ORDER BY created_at DESC, id DESC LIMIT $%d", len(args))
	rows, err := s.pool.Query(ctx, q, args...)
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
	const op = "postgres pending"
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	rows, err := s.pool.Query(ctx, selectRecord+"WHERE status = 'pending' ORDER BY created_at, id")
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
	const op = "postgres queue"
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	if limit <= 0 || name == "" {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, "SELECT id FROM asks WHERE post_queue = $1 AND status = 'pending' ORDER BY created_at, id LIMIT $2", name, limit)
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	return ids, nil
}

// Prune implements store.Store.
func (s *Store) Prune(ctx context.Context, t time.Time) (int, error) {
	const op = "postgres prune"
	if err := s.check(ctx); err != nil {
		return 0, store.WrapErr(ctx, op, err)
	}
	tag, err := s.pool.Exec(ctx, "DELETE FROM asks WHERE status <> 'pending' AND ended_at IS NOT NULL AND ended_at < $1", sqlrow.Nanos(t))
	if err != nil {
		return 0, store.WrapErr(ctx, op, err)
	}
	return int(tag.RowsAffected()), nil
}

// secretLen is the size of every secret.
const secretLen = 32

// Secret implements store.Store. Of two replicas creating a secret at once,
// the first insert wins and both return it.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, error) {
	op := fmt.Sprintf("postgres secret %q", name)
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	var k []byte
	err := s.pool.QueryRow(ctx, "SELECT value FROM secrets WHERE name = $1", name).Scan(&k)
	if errors.Is(err, pgx.ErrNoRows) {
		fresh := make([]byte, secretLen)
		_, _ = rand.Read(fresh) // never fails (crypto/rand)
		if _, err = s.pool.Exec(ctx, "INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING", name, fresh); err == nil {
			err = s.pool.QueryRow(ctx, "SELECT value FROM secrets WHERE name = $1", name).Scan(&k)
		}
	}
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	if len(k) != secretLen {
		return nil, store.WrapErr(ctx, op, store.Internal(nil, "corrupt secret: %d bytes, want %d", len(k), secretLen))
	}
	return k, nil
}

// ClaimDue implements store.Store: one statement, its own transaction (one
// round trip; a dispatcher claims every 0.5 s), locks the due rows that no
// other transaction holds (FOR UPDATE SKIP LOCKED) and moves their
// wake_at. A row another claimer moved meanwhile is re-checked against its
// new wake_at and so left out. A claimed row that does not decode stays
// claimed and is left out (*store.CorruptError); rows that cannot be read
// leave every claim standing until the lease ends, as a claimer that died
// would.
func (s *Store) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Record, error) {
	const op = "postgres claim due"
	if err := s.check(ctx); err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `WITH due AS (
			SELECT id, wake_at FROM asks WHERE wake_at IS NOT NULL AND wake_at <= $1
			ORDER BY wake_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
		UPDATE asks a SET wake_at = $3, version = a.version + 1 FROM due WHERE a.id = due.id
		RETURNING a.id, a.version, a.wake_at, a.record, due.wake_at, a.xmin::text, a.loud_xmin::text`,
		sqlrow.Nanos(now), limit, sqlrow.Nanos(now.Add(lease)))
	var (
		cs      []claimedRow
		corrupt *store.CorruptError
	)
	if err == nil {
		cs, corrupt, err = scanClaimed(rows)
	}
	if err != nil {
		return nil, store.WrapErr(ctx, op, err)
	}
	for _, c := range cs {
		s.records.Put(c.r, c.tag) // the claimer's next write is its Update
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].was != cs[j].was {
			return cs[i].was < cs[j].was
		}
		return cs[i].r.ID < cs[j].r.ID
	})
	out := make([]store.Record, len(cs))
	for i, c := range cs {
		out[i] = c.r
	}
	if corrupt != nil {
		return out, store.WrapErr(ctx, op, corrupt)
	}
	return out, nil
}

// claimedRow is one row ClaimDue's statement returned: the record as
// claimed, the wake_at it had before, and its xmin and loud_xmin.
type claimedRow struct {
	r   store.Record
	was int64
	tag rowTag
}

// scanClaimed reads the rows of ClaimDue's statement and closes rows. The
// rows that do not decode are left out and named in corrupt (nil for
// none).
func scanClaimed(rows pgx.Rows) (out []claimedRow, corrupt *store.CorruptError, err error) {
	defer rows.Close()
	for rows.Next() {
		var (
			c       claimedRow
			id      string
			version int64
			wake    int64
			data    []byte
			loud    *string
		)
		if err := rows.Scan(&id, &version, &wake, &data, &c.was, &c.tag.xmin, &loud); err != nil {
			return nil, nil, err
		}
		c.tag.loud = deref(loud)
		if c.r, err = sqlrow.Decode(id, version, wake, data); err != nil {
			store.Corrupt(&corrupt, id, err)
			continue
		}
		out = append(out, c)
	}
	return out, corrupt, rows.Err()
}

// Watch implements store.Store: fn hears of the writes of every Store on
// this schema, through this Store's LISTEN connection.
func (s *Store) Watch(fn func(store.Change)) (stop func()) { return s.hub.Watch(fn) }

// Lease implements store.Store. Expiry is judged by the database's clock,
// so replicas whose clocks differ still agree.
func (s *Store) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	op := fmt.Sprintf("postgres lease %q", name)
	if err := s.check(ctx); err != nil {
		return false, store.WrapErr(ctx, op, err)
	}
	if ttl <= 0 {
		if _, err := s.pool.Exec(ctx, "DELETE FROM leases WHERE name = $1 AND holder = $2", name, holder); err != nil {
			return false, store.WrapErr(ctx, op, err)
		}
		return false, nil
	}
	micros := max(ttl.Microseconds(), 1)
	var held bool
	err := s.pool.QueryRow(ctx, `INSERT INTO leases (name, holder, expires_at)
		VALUES ($1, $2, clock_timestamp() + $3::bigint * interval '1 microsecond')
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at <= clock_timestamp()
		RETURNING true`, name, holder, micros).Scan(&held)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, store.WrapErr(ctx, op, err)
	}
	return held, nil
}

// Ping checks that the database answers a query within ctx, on a
// connection of its own: the pool's may all be busy with work that is
// merely slow. A failed Ping drops the connection; the next makes another.
// When the server answered a statement of the pool less than pingFresh
// ago, that answer is the ping's: a replica's health checks then cost the
// database nothing while the replica works or polls for due records.
func (s *Store) Ping(ctx context.Context) error {
	const op = "postgres ping"
	if err := s.check(ctx); err != nil {
		return store.WrapErr(ctx, op, err)
	}
	if s.trips.answeredWithin(pingFresh) {
		return nil
	}
	s.pingMu.Lock()
	defer s.pingMu.Unlock()
	if s.pingConn == nil {
		conn, err := pgx.ConnectConfig(ctx, s.listenCfg.Copy())
		if err != nil {
			return store.WrapErr(ctx, op, err)
		}
		s.pingConn = conn
	}
	if _, err := s.pingConn.Exec(ctx, ";"); err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond) // a dead link must not hold the next Ping
		_ = s.pingConn.Close(cctx)
		cancel()
		s.pingConn = nil
		return store.WrapErr(ctx, op, err)
	}
	return nil
}

// pingFresh is how recent an answer to the pool stands for a Ping: about
// two of cmd/slackask's pings apart, so that the dispatcher's claims
// (every 0.5 s when idle) answer for them, and a database gone is still
// found within seconds.
const pingFresh = time.Second

// Close stops listening, stops every watcher and closes the connections;
// calls after Close fail. A second Close does nothing.
func (s *Store) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	s.pingMu.Lock()
	if s.pingConn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = s.pingConn.Close(ctx)
		cancel()
		s.pingConn = nil
	}
	s.pingMu.Unlock()
	s.stopListen()
	<-s.listenDone
	s.hub.Close()
	s.acks.Close()
	s.pool.Close()
	return nil
}
