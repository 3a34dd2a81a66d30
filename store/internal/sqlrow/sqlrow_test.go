package sqlrow

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// row is one row of (id, version, wake_at, data), as a driver scans it.
type row struct {
	id      string
	version int64
	wake    *int64
	data    string
}

func (r row) Scan(dest ...any) error {
	*dest[0].(*string) = r.id
	*dest[1].(*int64) = r.version
	if r.wake != nil {
		*dest[2].(*any) = *r.wake
	} else {
		*dest[2].(*any) = nil
	}
	*dest[3].(*[]byte) = []byte(r.data)
	return nil
}

func TestRecord(t *testing.T) {
	wake := int64(1700000000000000000)
	r, err := Record(row{"a1", 7, &wake, `{"id":"a1","status":"pending","wakeAt":"2000-01-01T00:00:00Z"}`})
	if err != nil || r.ID != "a1" || r.Version != 7 || !r.WakeAt.Equal(time.Unix(0, wake)) {
		t.Fatalf("Record = %+v, %v", r, err)
	}
	if r, err := Record(row{"a1", 1, nil, `{"id":"a1","wakeAt":"2000-01-01T00:00:00Z"}`}); err != nil || !r.WakeAt.IsZero() {
		t.Fatalf("NULL wake_at: %+v, %v (the column, not the JSON, says when)", r.WakeAt, err)
	}
	for _, bad := range []row{{"a1", 1, nil, `{"id":`}, {"a1", 1, nil, `{"id":"a2"}`}} {
		if _, err := Record(bad); interaction.ErrorCode(err) != interaction.Internal {
			t.Errorf("Record(%q) = %v, want INTERNAL (a corrupt record)", bad.data, err)
		}
	}
}

func TestNanosClamps(t *testing.T) {
	if Nanos(time.Time{}) != math.MinInt64 || Nanos(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)) != math.MaxInt64 {
		t.Fatal("times outside an int64 of nanoseconds are not clamped")
	}
	if at := time.Unix(5, 6); Nanos(at) != at.UnixNano() {
		t.Fatal("Nanos changed a time inside the range")
	}
}

// rows is a result set of rows; scanErr fails the scan of the row at
// that index (from 1; 0: none).
type rows struct {
	rs      []row
	at      int
	scanErr int
}

func (r *rows) Next() bool { r.at++; return r.at <= len(r.rs) }
func (r *rows) Err() error { return nil }
func (r *rows) Scan(dest ...any) error {
	if r.at == r.scanErr {
		return errors.New("connection lost")
	}
	return r.rs[r.at-1].Scan(dest...)
}

// Rows that do not decode are left out and named, with the rest
// returned; a row that cannot be read fails the whole.
func TestRecordsLeaveOutCorrupt(t *testing.T) {
	set := []row{
		{"a1", 1, nil, `{"id":"a1"}`},
		{"a2", 1, nil, `{"id":`},
		{"a3", 1, nil, `{"id":"a3"}`},
		{"a4", 1, nil, `{"id":"other"}`},
	}
	got, err := Records(&rows{rs: set})
	var corrupt *store.CorruptError
	if !errors.As(err, &corrupt) || !slices.Equal(corrupt.IDs, []string{"a2", "a4"}) || len(corrupt.Errs) != 2 ||
		interaction.ErrorCode(err) != interaction.Internal || !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Records: %v, want a2 and a4 named, INTERNAL", err)
	}
	if len(got) != 2 || got[0].ID != "a1" || got[1].ID != "a3" {
		t.Errorf("Records returned %+v, want a1 and a3", got)
	}
	if got, err := Records(&rows{rs: set[:1]}); err != nil || len(got) != 1 {
		t.Errorf("Records of good rows: %d, %v", len(got), err)
	}
	if got, err := Records(&rows{rs: set, scanErr: 3}); err == nil || errors.As(err, &corrupt) || got != nil {
		t.Errorf("Records with a row that cannot be read: %d records, %v; want none and its error", len(got), err)
	}
}
