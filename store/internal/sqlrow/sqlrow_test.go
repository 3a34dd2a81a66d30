package sqlrow

import (
	"math"
	"testing"
	"time"

	"github.com/slackask/slackask/interaction"
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
