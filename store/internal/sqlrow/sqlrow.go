// Package sqlrow decodes the asks table's rows for the SQL stores
// (store/sqlite, store/postgres): the part of their reads that is not
// dialect. Both drivers' rows (database/sql, pgx) satisfy its interfaces.
package sqlrow

import (
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/slackask/slackask/store"
)

// Scanner is one row.
type Scanner interface {
	Scan(dest ...any) error
}

// Rows is a result set; its caller closes it.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// Record decodes a row of (id, version, wake_at, data): the record's JSON
// with the columns the store keeps beside it. A row whose JSON does not
// decode, or names another id, is an Internal error (a corrupt record).
func Record(sc Scanner) (store.Record, error) {
	w, err := scanRow(sc)
	if err != nil {
		return store.Record{}, err
	}
	return Decode(w.id, w.version, w.wake, w.data)
}

// scanned is a row of (id, version, wake_at, data) as scanned.
type scanned struct {
	id      string
	version int64
	wake    any // int64 or nil: the cheapest scan in both drivers
	data    []byte
}

func scanRow(sc Scanner) (w scanned, err error) {
	err = sc.Scan(&w.id, &w.version, &w.wake, &w.data)
	return w, err
}

// Decode is Record's decoding of a row already scanned: wake is the
// wake_at column as scanned into an any (int64, or nil for NULL).
func Decode(id string, version int64, wake any, data []byte) (store.Record, error) {
	var r store.Record
	if err := json.Unmarshal(data, &r); err != nil {
		return store.Record{}, store.Internal(errors.Join(store.ErrCorrupt, err), "corrupt record %q: %v", id, err)
	}
	if r.ID != id {
		return store.Record{}, store.Internal(store.ErrCorrupt, "corrupt record %q: it holds id %q", id, r.ID)
	}
	r.Version = version
	r.WakeAt = time.Time{}
	if w, ok := wake.(int64); ok {
		r.WakeAt = time.Unix(0, w)
	}
	return r, nil
}

// Records decodes the rows of rs (see Record). Rows that do not decode
// are left out and named in a *store.CorruptError returned with the
// others; a row that cannot be read fails the whole.
func Records(rs Rows) ([]store.Record, error) {
	var (
		out     []store.Record
		corrupt *store.CorruptError
	)
	for rs.Next() {
		w, err := scanRow(rs)
		if err != nil {
			return nil, err
		}
		r, err := Decode(w.id, w.version, w.wake, w.data)
		if err != nil {
			store.Corrupt(&corrupt, w.id, err)
			continue
		}
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	if corrupt != nil {
		return out, corrupt
	}
	return out, nil
}

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// Nanos is t in unix nanoseconds, clamped to what an int64 holds (years
// 1678 to 2262), as the stores keep times.
func Nanos(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return math.MinInt64
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// InstallColumns are the installs table's columns in the order Install
// scans them.
const InstallColumns = "id, enterprise, team, org_wide, version, sealed, expires_at, updated_at"

// Install decodes a row of InstallColumns (expires_at NULL: never; times
// in unix nanoseconds).
func Install(sc Scanner) (store.InstallRow, error) {
	var (
		r       store.InstallRow
		expires *int64
		updated int64
	)
	if err := sc.Scan(&r.Key, &r.Enterprise, &r.Team, &r.OrgWide, &r.Version, &r.Sealed, &expires, &updated); err != nil {
		return r, err
	}
	if expires != nil {
		r.ExpiresAt = time.Unix(0, *expires).UTC()
	}
	r.UpdatedAt = time.Unix(0, updated).UTC()
	return r, nil
}

// Installs decodes every row of rs with Install.
func Installs(rs Rows) ([]store.InstallRow, error) {
	var out []store.InstallRow
	for rs.Next() {
		r, err := Install(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// ExpiresCol is how an installation's expiry is stored: NULL for never.
func ExpiresCol(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := Nanos(t)
	return &n
}
