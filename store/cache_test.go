package store

import (
	"fmt"
	"testing"

	"github.com/slackask/slackask/interaction"
)

func TestRecordCache(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		want int
	}{
		{"zero value", 0, DefaultCacheSize},
		{"max set", 10, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := RecordCache{Max: tc.max}
			if _, ok := c.Get("a"); ok {
				t.Fatal("an empty cache holds a record")
			}
			c.Put(Record{Ask: interaction.Ask{ID: "a", TS: "1"}})
			c.Put(Record{Ask: interaction.Ask{ID: "a", TS: "2"}})
			if r, ok := c.Get("a"); !ok || r.TS != "2" || c.Len() != 1 {
				t.Fatalf("Get = %+v %v, Len %d; want the second Put", r, ok, c.Len())
			}
			c.Drop("a")
			if _, ok := c.Get("a"); ok {
				t.Fatal("dropped record still cached")
			}
			for i := range tc.want + 50 {
				c.Put(Record{Ask: interaction.Ask{ID: fmt.Sprint(i)}})
			}
			if c.Len() != tc.want {
				t.Fatalf("%d records cached, want %d", c.Len(), tc.want)
			}
			c.Clear()
			if c.Len() != 0 {
				t.Fatal("Clear left records")
			}
		})
	}
}
