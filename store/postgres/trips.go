package postgres

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// tripCounter counts the round trips a Store's pool makes to the database,
// as the driver sends them: each Query, QueryRow and Exec (BEGIN and
// COMMIT of a transaction included) is one, and a pipelined batch is one
// however many statements it holds. Not counted: the LISTEN connection,
// Ping's, and the pool's own liveness checks. It also notes when the
// server last answered one (see Store.Ping).
type tripCounter struct {
	n        atomic.Int64
	answered atomic.Int64 // unix nanoseconds of the last answer; 0 for none yet
}

// noteAnswer notes an answer from the server: a round trip that ended
// without error, or with the server's own error (it answered). A
// connection's error, a timeout or a cancelled context is none.
func (t *tripCounter) noteAnswer(err error) {
	if pgErr := (*pgconn.PgError)(nil); err == nil || errors.As(err, &pgErr) {
		t.answered.Store(time.Now().UnixNano())
	}
}

// answeredWithin says whether the server answered a round trip of the
// pool less than d ago.
func (t *tripCounter) answeredWithin(d time.Duration) bool {
	at := t.answered.Load()
	return at != 0 && time.Since(time.Unix(0, at)) < d
}

var (
	_ pgx.QueryTracer = (*tripCounter)(nil)
	_ pgx.BatchTracer = (*tripCounter)(nil)
)

func (t *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.n.Add(1)
	return ctx
}

func (t *tripCounter) TraceQueryEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	t.noteAnswer(d.Err)
}

func (t *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.n.Add(1)
	return ctx
}

func (t *tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (t *tripCounter) TraceBatchEnd(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchEndData) {
	t.noteAnswer(d.Err)
}

// RoundTrips returns how many round trips the Store's pool has made to the
// database since Open (see tripCounter).
func (s *Store) RoundTrips() int64 { return s.trips.n.Load() }
