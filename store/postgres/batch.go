package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slackask/slackask/store"
)

var _ store.Batcher = (*Store)(nil)

// UpdateBatch implements store.Batcher: the ops' writes share one
// transaction, so one commit (one WAL flush, one wake-up of each
// listener) serves them all. store/slotted hands it the Updates that
// queued behind each other.
//
// When this Store has a copy of every record of the batch (records), the
// transaction is one pipelined round trip: BEGIN, each op's
// compare-and-set as Update's one-statement path, the events, COMMIT. The
// ops of a record whose compare-and-set missed (the row moved on) wrote
// nothing; the statement returned the row as it stands, and they run again
// afterwards, in order, as one more such batch on those copies (one op
// alone: as Update); their fns then run twice. Otherwise the batch reads
// every record under lock first (BEGIN and one SELECT … FOR UPDATE), then
// writes with COMMIT: two round trips.
//
// Deadlock freedom: a batch locks its rows in id order (the read's ORDER
// BY, the writes sorted by id) and the event counter last, as every other
// write takes its one row before the counter; so no two writers ever wait
// for each other in a cycle.
func (s *Store) UpdateBatch(ops []*store.UpdateOp) {
	var todo []*store.UpdateOp
	for _, op := range ops {
		op.Rec, op.Err = store.Record{}, nil
		if err := s.check(op.Ctx); err != nil {
			op.Err = store.WrapErr(op.Ctx, updateOp(op.ID), err)
			continue
		}
		todo = append(todo, op)
	}
	switch len(todo) {
	case 0:
		return
	case 1: // a statement of its own is its own transaction: no BEGIN, no COMMIT
		op := todo[0]
		op.Rec, op.Err = s.Update(op.Ctx, op.ID, op.Fn)
		return
	}
	ctx, stop := batchContext(todo)
	defer stop()
	// Stable: the ops of one record keep their order.
	slices.SortStableFunc(todo, func(a, b *store.UpdateOp) int { return strings.Compare(a.ID, b.ID) })
	again := s.writeBatch(ctx, todo)
	if len(again) > 1 {
		// Their rows moved on (another replica wrote them, quietly or not
		// heard of yet): one more batch writes them over the rows the
		// misses returned (one round trip), or reads them under lock
		// where it has none (two), rather than one Update per op. Still
		// in id order, a record's ops in theirs.
		again = s.writeBatch(ctx, again)
	}
	for _, op := range again {
		op.Rec, op.Err = s.Update(op.Ctx, op.ID, op.Fn)
	}
}

// batchContext is the context of a batch's statements: the transaction is
// every op's, so one caller giving up must not cut a statement short (that
// would roll back the others' writes); it ends once every op's has.
func batchContext(ops []*store.UpdateOp) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ops[0].Ctx))
	var left atomic.Int64
	left.Store(int64(len(ops)))
	stops := make([]func() bool, len(ops))
	for i, op := range ops {
		stops[i] = context.AfterFunc(op.Ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// batchRecord is one record of a batch as it stands between its ops.
type batchRecord struct {
	cur store.Record // as the ops so far left it
	// tag: what this Store knew of the row before the batch (cached;
	// nothing when read under lock), then what the writes returned.
	tag rowTag
	// from: the version of the copy the batch began with.
	from int64
	// wrote: an op of the batch wrote it (its first write is queued);
	// first is the index in writes of that first write; version is what
	// its last write made the row's version.
	wrote   bool
	first   int
	version int64
	// merged: its first write is a pick merge (merge.go), so that the row
	// may hold picks cur lacks: its later ops merge too, or wait (deferred)
	// for the row; lacks: the merge found other picks merged since the copy.
	merged, lacks bool
	// deferred: an op after a merge could not be merged; it and the
	// record's later ops run again after the batch.
	deferred bool
	// stale: its compare-and-set missed, or its cached copy was never
	// checked against the row (no op wrote it): its ops run again.
	stale bool
	// miss: what its missed compare-and-set returned (the row as it
	// stands), kept as its copy for the ops' next run.
	miss casResult
	// corrupt: why the row, read under lock, does not decode; its ops
	// fail with it, and the batch's other ops go on.
	corrupt error
}

// batchWrite is one op's queued statement.
type batchWrite struct {
	op    *store.UpdateOp
	next  store.Record
	merge bool // a pick merge
}

// returnRow ends a batch's write that cannot miss (under lock, or over
// the transaction's own write): the row's new xmin, version and loud_xmin.
const returnRow = " RETURNING xmin::text, version, loud_xmin::text"

// writeBatch runs ops (sorted by id) in one transaction and returns the
// ops to run again as Update (see UpdateBatch); every other op has its
// result.
func (s *Store) writeBatch(ctx context.Context, ops []*store.UpdateOp) (again []*store.UpdateOp) {
	recs := map[string]*batchRecord{}
	cached := true
	for _, op := range ops {
		if _, ok := recs[op.ID]; ok {
			continue
		}
		cur, tag, ok := s.records.Get(op.ID)
		if !ok {
			cached = false
			break
		}
		recs[op.ID] = &batchRecord{cur: cur, tag: tag, from: cur.Version}
	}
	// fail gives err to every op without a result of its own (an fn's
	// error, a done context): nothing was written.
	fail := func(err error) {
		for _, op := range ops {
			s.records.Drop(op.ID)
			if op.Err == nil {
				op.Rec, op.Err = store.Record{}, store.WrapErr(op.Ctx, updateOp(op.ID), err)
			}
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		fail(err)
		return nil
	}
	// The pool drops a connection that comes back inside a transaction:
	// an error anywhere below never leaks an open one.
	defer conn.Release()
	rollback := func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK") }

	write := &pgx.Batch{}
	if cached {
		write.Queue("BEGIN")
	} else {
		recs, err = s.lockRecords(ctx, conn.Conn(), ops)
		if err != nil {
			rollback()
			fail(err)
			return nil
		}
	}
	var (
		writes   []batchWrite
		cas      []bool // of writes: a casOrCurrent or mergeOrCurrent statement
		events   []store.Event
		deferred = map[*store.UpdateOp]bool{}
	)
	for _, op := range ops {
		if err := op.Ctx.Err(); err != nil {
			op.Rec, op.Err = store.Record{}, store.WrapErr(op.Ctx, updateOp(op.ID), err)
			continue
		}
		rec, ok := recs[op.ID]
		switch {
		case !ok:
			op.Rec, op.Err = store.Record{}, store.WrapErr(op.Ctx, updateOp(op.ID), store.ErrNotFound)
			continue
		case rec.corrupt != nil:
			op.Rec, op.Err = store.Record{}, store.WrapErr(op.Ctx, updateOp(op.ID), rec.corrupt)
			continue
		case rec.deferred:
			deferred[op] = true
			continue
		}
		// A copy: rec.cur stays the base of the record's next op if fn
		// refuses after changing it.
		w, fnErr, err := applyFn(&rec.cur, store.Clone(rec.cur), op.Fn)
		if fnErr != nil {
			op.Rec, op.Err = store.Record{}, fnErr // as is; nothing of op is written
			continue
		}
		if err != nil {
			op.Rec, op.Err = store.Record{}, store.WrapErr(op.Ctx, updateOp(op.ID), err) // nothing of op is written
			continue
		}
		var (
			p     pick
			merge bool
		)
		if cached && (!rec.wrote || rec.merged) {
			p, merge = pickOf(rec.tag, &rec.cur, w)
		}
		if rec.merged && !merge {
			// The row may hold picks rec.cur lacks: only the row itself
			// is a base for a whole write.
			rec.deferred, deferred[op] = true, true
			continue
		}
		var (
			q    string
			args []any
		)
		if merge {
			q, args = mergeStatement(op.ID, rec.tag.loud, p, rec.wrote)
			if rec.wrote { // over this transaction's own merge
				q += returnRow
			} else {
				q = "WITH up AS (" + q + returning + mergeOrCurrent
			}
		} else {
			if args, err = w.args(); err != nil {
				op.Rec, op.Err = store.Record{}, store.WrapErr(op.Ctx, updateOp(op.ID), err) // nothing of op is written
				continue
			}
			switch {
			case rec.wrote: // over this transaction's own write: a row written by anyone else has another xmin
				q = updateAsk + " AND xmin = pg_current_xact_id()::xid" + returnRow
			case cached: // over the row version this Store last saw (Update's one statement)
				q = "WITH up AS (" + updateAsk + " AND xmin::text = $13" + returning + casOrCurrent
				args = append(args, rec.tag.xmin)
			default:
				q = updateAsk + returnRow
			}
		}
		cas = append(cas, cached && !rec.wrote)
		if !rec.wrote {
			rec.wrote, rec.first, rec.merged = true, len(writes), merge
		}
		write.Queue(q, args...)
		writes = append(writes, batchWrite{op: op, next: w.next, merge: merge})
		events = append(events, w.evs...)
		rec.cur = w.next
	}
	if len(events) > 0 {
		// The last statement before COMMIT: it holds the counter (see
		// eventsCTE) for as short a time as can be.
		write.Queue(batchEvents, batchEventArgs(events)...)
	}
	// A cached batch with nothing to write sends nothing: its transaction
	// was never begun on the server.
	if len(writes) > 0 || !cached {
		write.Queue("COMMIT")
		res, err := s.sendBatchWrite(ctx, conn.Conn(), write, cached, cas, len(events) > 0)
		if err != nil {
			rollback()
			fail(err)
			return nil
		}
		for i, w := range writes {
			rec := recs[w.op.ID]
			switch {
			case res[i].wrote:
				if i == rec.first && w.merge && (rec.tag.xmin == "" || res[i].version != rec.from+1) {
					rec.lacks = true // other picks were merged since the copy
				}
				w.op.Rec = store.Clone(w.next) // fn may keep the pointer it was given
				w.op.Rec.Version = res[i].version
				rec.tag, rec.version = rowTag{xmin: res[i].xmin, loud: res[i].loud}, res[i].version
			case cached && i == rec.first:
				rec.stale, rec.miss = true, res[i] // the row moved on
			default: // under lock, or over this transaction's own write: cannot miss
				w.op.Rec, w.op.Err = store.Record{}, store.WrapErr(w.op.Ctx, updateOp(w.op.ID),
					store.Internal(nil, "compare-and-set of version %d matched no row", w.next.Version-1))
				rec.stale = true
			}
		}
	}
	for id, rec := range recs {
		switch {
		case rec.stale:
			s.keepCurrent(id, rec.miss)
		case rec.wrote:
			rec.cur.Version = rec.version
			if rec.lacks {
				rec.tag.xmin = ""
			}
			s.records.Put(rec.cur, rec.tag)
		case cached:
			// fns refused a copy never checked against the row: they run
			// again on the row, read under lock.
			rec.stale = true
			s.records.Drop(id)
		}
	}
	if !cached {
		return nil
	}
	for _, op := range ops {
		if rec, ok := recs[op.ID]; !ok || !rec.stale && !deferred[op] {
			continue
		}
		if err := op.Ctx.Err(); err != nil {
			op.Rec, op.Err = store.Record{}, store.WrapErr(op.Ctx, updateOp(op.ID), err)
			continue
		}
		op.Rec, op.Err = store.Record{}, nil
		again = append(again, op)
	}
	return again
}

// lockRecords begins the transaction on conn and reads the records of ops
// under lock, in id order.
func (s *Store) lockRecords(ctx context.Context, conn *pgx.Conn, ops []*store.UpdateOp) (map[string]*batchRecord, error) {
	var ids []string
	for _, op := range ops {
		if len(ids) == 0 || ids[len(ids)-1] != op.ID {
			ids = append(ids, op.ID)
		}
	}
	read := &pgx.Batch{}
	read.Queue("BEGIN")
	read.Queue(selectRecord+"WHERE id = ANY($1) ORDER BY id FOR UPDATE", ids)
	br := conn.SendBatch(ctx, read)
	_, err := br.Exec()
	var (
		rs      []store.Record
		corrupt *store.CorruptError
	)
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			if rs, err = scanRecords(rows); errors.As(err, &corrupt) {
				err = nil
			}
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	recs := make(map[string]*batchRecord, len(rs))
	for _, r := range rs {
		recs[r.ID] = &batchRecord{cur: r}
	}
	if corrupt != nil {
		for i, id := range corrupt.IDs {
			recs[id] = &batchRecord{corrupt: corrupt.Errs[i]}
		}
	}
	return recs, nil
}

// sendBatchWrite sends write (an update per element of cas, each a
// casOrCurrent statement where cas says so, then the events if any, then
// COMMIT; BEGIN first when begin) and returns what each update did. Any
// error means nothing was written.
func (s *Store) sendBatchWrite(ctx context.Context, conn *pgx.Conn, write *pgx.Batch, begin bool, cas []bool, events bool) ([]casResult, error) {
	br := conn.SendBatch(ctx, write)
	var err error
	if begin {
		_, err = br.Exec()
	}
	res := make([]casResult, len(cas))
	for i := 0; i < len(cas) && err == nil; i++ {
		if cas[i] {
			res[i], err = scanCAS(br.QueryRow())
			continue
		}
		var loud *string
		if err = br.QueryRow().Scan(&res[i].xmin, &res[i].version, &loud); err == nil {
			res[i].wrote, res[i].loud = true, deref(loud)
		} else if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
	}
	if err == nil && events {
		_, err = br.Exec()
	}
	if err == nil {
		var tag pgconn.CommandTag
		if tag, err = br.Exec(); err == nil && tag.String() != "COMMIT" {
			err = fmt.Errorf("the transaction ended with %s", tag)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return res, err
}

// batchEvents inserts a batch's events: of each ask only if this
// transaction wrote its row (its compare-and-set matched), numbered in
// order from the counter, which it takes last (see eventsCTE).
const batchEvents = `WITH e AS (
		SELECT e.* FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[])
			WITH ORDINALITY AS e(ask_id, at, kind, by_user, data, ord)
		WHERE EXISTS (SELECT FROM asks a WHERE a.id = e.ask_id AND a.xmin = pg_current_xact_id()::xid)),
	n AS (SELECT count(*) AS n FROM e),
	seq AS (UPDATE event_seq SET last = last + n.n FROM n WHERE n.n > 0 RETURNING last, n.n),
	ev AS (INSERT INTO events (seq, ask_id, at, kind, by_user, data)
		SELECT seq.last - seq.n + row_number() OVER (ORDER BY e.ord), e.ask_id, e.at, e.kind, e.by_user::json, e.data::json
		FROM seq, e)
	SELECT 1`

// batchEventArgs are batchEvents' arguments for evs, in order: one array
// per column (as eventArgs, with each event's ask id).
func batchEventArgs(evs []store.Event) []any {
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.AskID
	}
	cols := eventArgs(evs) // count, id, then the columns
	return append([]any{ids}, cols[2:]...)
}
