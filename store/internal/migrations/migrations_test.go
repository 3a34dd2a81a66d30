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
