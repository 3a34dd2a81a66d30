package migrations

import (
	"testing"
	"testing/fstest"
)

func TestRead(t *testing.T) {
	ms, err := Read(fstest.MapFS{"m/0002_b.sql": {Data: []byte("B")}, "m/0001_a.sql": {Data: []byte("A")}, "m/README": {}}, "m")
	if err != nil || len(ms) != 2 || ms[0] != (Migration{1, "0001_a.sql", "A"}) || ms[1] != (Migration{2, "0002_b.sql", "B"}) {
		t.Fatalf("Read = %+v, %v", ms, err)
	}
	for _, bad := range []fstest.MapFS{
		{"m/0002_b.sql": {Data: []byte("")}},
		{"m/0001_a.sql": {}, "m/0003_c.sql": {}},
		{"m/init.sql": {}},
		{},
	} {
		if _, err := Read(bad, "m"); err == nil {
			t.Errorf("Read accepted %v", bad)
		}
	}
}

func TestSet(t *testing.T) {
	s := NewSet(fstest.MapFS{"m/0001_a.sql": {Data: []byte("A")}, "m/0002_b.sql": {Data: []byte("B")}}, "m")
	if ms, err := s.All(); err != nil || len(ms) != 2 || s.Version() != 2 {
		t.Fatalf("All = %+v, %v; Version = %d", ms, err, s.Version())
	}
	if v := NewSet(fstest.MapFS{}, "m").Version(); v != 0 {
		t.Fatalf("Version of no migrations = %d, want 0", v)
	}
}
