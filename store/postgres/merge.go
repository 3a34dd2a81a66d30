package postgres

import (
	"encoding/json"
	"reflect"
	"strconv"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// A pick merge writes one person's pick into the row without a current
// copy of the record: the commonest click on several replicas, which
// otherwise finds its replica's copy stale (another replica wrote a pick
// of the same ask quietly, unannounced) and pays a second round trip.
//
// It holds because of what a quiet write is (store.Record.Quiet): fn
// changed one entry of a person's picks (Record.Progress[q], or
// Record.Drafts[user][q]) and nothing else, and decided so from the
// record outside the picks other writes of that kind change. Such writes
// commute when they touch different entries, and the later one wins when
// they touch the same (as their commits would order them anyway). So a
// copy that is current as of the row's last other write (loud_xmin,
// migration 0009) is good enough for fn: the statement sets the one entry
// in the row as it stands, on the condition that loud_xmin is still the
// one the copy saw. When it is not, nothing is written and the row comes
// back, as a missed compare-and-set does.
//
// pickOf tells such a write from another: a Quiet write that changed
// more, or several entries, is written whole.

// rowTag is what a Store knows of the row a cached record stands for.
type rowTag struct {
	// xmin: the row is the cached record at this row version. "" when it
	// may hold picks the record lacks (a merge of ours over other
	// replicas' ones): a compare-and-set of the whole record over it
	// misses, and the row comes back.
	xmin string
	// loud: the row's loud_xmin as the record stands for it; "" when
	// unknown, and then no merge is tried.
	loud string
}

// pick is the one entry of a person's picks a quiet write changed.
type pick struct {
	user string // Drafts[user]; "" for Progress
	q    int    // the entry's index; -1 for none (the write changed no pick)
	n    int    // the array's length, len(Questions)
	val  []byte // the entry, encoded
	all  []byte // the whole array, encoded: written where the row has none yet
}

// pickOf returns the one entry of w's picks that differs from base's,
// when w is a quiet write of picks alone (written.picks) and that entry is
// all it changed, or none when it changed none. A pick needs the
// loud_xmin of the row base stands for (tag).
func pickOf(tag rowTag, base *store.Record, w written) (pick, bool) {
	if !w.picks || tag.loud == "" {
		return pick{}, false
	}
	next := &w.next
	var (
		p     pick
		found int
	)
	n := len(next.Questions)
	diff := func(user string, was, is []interaction.Progress) bool {
		if len(is) != n || len(was) > n {
			return false
		}
		for i := range is {
			var w interaction.Progress
			if i < len(was) {
				w = was[i]
			}
			if !reflect.DeepEqual(w, is[i]) {
				found++
				p = pick{user: user, q: i, n: n}
			}
		}
		return true
	}
	if !reflect.DeepEqual(base.Progress, next.Progress) && !diff("", base.Progress, next.Progress) {
		return pick{}, false
	}
	for user := range base.Drafts {
		if _, ok := next.Drafts[user]; !ok {
			return pick{}, false
		}
	}
	for user, is := range next.Drafts {
		if was := base.Drafts[user]; !reflect.DeepEqual(was, is) && !diff(user, was, is) {
			return pick{}, false
		}
	}
	if found > 1 {
		return pick{}, false
	}
	if found == 0 {
		return pick{q: -1}, true // a pick made again: only the version moves
	}
	all := next.Progress
	if p.user != "" {
		all = next.Drafts[p.user]
	}
	var err error
	if p.val, err = json.Marshal(all[p.q]); err != nil {
		return pick{}, false
	}
	if p.all, err = json.Marshal(all); err != nil {
		return pick{}, false
	}
	return p, true
}

// sameBesidesPicks reports whether a and b differ in nothing but their
// picks, Version and what is never kept.
func sameBesidesPicks(a, b *store.Record) bool {
	x, y := *a, *b
	x.Progress, y.Progress = nil, nil
	x.Drafts, y.Drafts = nil, nil
	x.Version, y.Version = 0, 0
	x.Quiet, y.Quiet = false, false
	x.NewEvents, y.NewEvents = nil, nil
	return reflect.DeepEqual(x, y)
}

// mergeNone is the merge of a write that changed no pick: the version
// moves, on the same condition as a pick's.
const mergeNone = `UPDATE asks SET version = version + 1, quiet_at = version + 1
		WHERE id = $1 AND loud_xmin::text = $2::text`

// mergeProgress and mergeDraft set entry $3 of the row's progress, or of
// the drafts of user $3, to $4 (drafts: $5): the array the pick was made
// in ($5; drafts: $6) where the row has none, of length $6 (drafts: $7)
// where it has one, no write otherwise. $1 is the id, $2 the loud_xmin the
// pick was made over. The write is quiet: no notification, loud_xmin kept.
const (
	mergeProgress = `UPDATE asks SET version = version + 1, quiet_at = version + 1,
		record = jsonb_set(record, '{progress}', CASE WHEN record->'progress' IS NULL THEN $5::jsonb
			ELSE jsonb_set(record->'progress', ARRAY[$3::text], $4::jsonb) END)
		WHERE id = $1 AND loud_xmin::text = $2::text
		AND CASE jsonb_typeof(record->'progress') WHEN 'array' THEN jsonb_array_length(record->'progress') = $6::int
			ELSE record->'progress' IS NULL END`
	mergeDraft = `UPDATE asks SET version = version + 1, quiet_at = version + 1,
		record = jsonb_set(record, '{drafts}', CASE
			WHEN record->'drafts' IS NULL THEN jsonb_build_object($3::text, $6::jsonb)
			WHEN record->'drafts'->($3::text) IS NULL THEN record->'drafts' || jsonb_build_object($3::text, $6::jsonb)
			ELSE jsonb_set(record->'drafts', ARRAY[$3::text, $4::text], $5::jsonb) END)
		WHERE id = $1 AND loud_xmin::text = $2::text
		AND CASE jsonb_typeof(record->'drafts')
			WHEN 'object' THEN CASE jsonb_typeof(record->'drafts'->($3::text))
				WHEN 'array' THEN jsonb_array_length(record->'drafts'->($3::text)) = $7::int
				ELSE record->'drafts'->($3::text) IS NULL END
			ELSE record->'drafts' IS NULL END`
)

// mergeStatement is the merge of p into row id over loud_xmin loud, and
// its arguments; own adds that this transaction wrote the row already (a
// batch's later op).
func mergeStatement(id, loud string, p pick, own bool) (string, []any) {
	q, args := mergeProgress, []any{id, loud, strconv.Itoa(p.q), string(p.val), string(p.all), p.n}
	switch {
	case p.q < 0:
		q, args = mergeNone, []any{id, loud}
	case p.user != "":
		q, args = mergeDraft, []any{id, loud, p.user, strconv.Itoa(p.q), string(p.val), string(p.all), p.n}
	}
	if own {
		q += " AND xmin = pg_current_xact_id()::xid"
	}
	return q, args
}
