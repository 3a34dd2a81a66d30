package postgres

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// tripCounter counts the round trips a Store's pool makes to the database,
// as the driver sends them: each Query, QueryRow and Exec (BEGIN and
// COMMIT of a transaction included) is one, and a pipelined batch is one
// however many statements it holds. Not counted: the LISTEN connection,
// Ping's, and the pool's own liveness checks.
type tripCounter struct{ n atomic.Int64 }

var (
	_ pgx.QueryTracer = (*tripCounter)(nil)
	_ pgx.BatchTracer = (*tripCounter)(nil)
)

func (t *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	t.n.Add(1)
	return ctx
}

func (t *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (t *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.n.Add(1)
	return ctx
}

func (t *tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (t *tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// RoundTrips returns how many round trips the Store's pool has made to the
// database since Open (see tripCounter).
func (s *Store) RoundTrips() int64 { return s.trips.n.Load() }
