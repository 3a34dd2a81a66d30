package reccache

import (
	"fmt"
	"testing"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

func rec(id string, version int64) store.Record {
	return store.Record{Ask: interaction.Ask{ID: id, Mention: []string{"U1"}}, Version: version}
}

// A cached record comes back with its tag, as a copy of its own; DropOlder
// forgets it only for a newer version; Max bounds the records kept.
func TestCache(t *testing.T) {
	c := Cache[string]{Max: 3}
	r := rec("a", 2)
	c.Put(r, "x7")
	r.Mention[0] = "changed"
	got, tag, ok := c.Get("a")
	if !ok || tag != "x7" || got.Version != 2 || got.Mention[0] != "U1" {
		t.Fatalf("Get = %+v %q %v", got, tag, ok)
	}
	got.Mention[0] = "changed"
	if again, _, _ := c.Get("a"); again.Mention[0] != "U1" {
		t.Fatal("Get shares memory with the cache")
	}
	c.DropOlder("a", 2) // its own write heard back
	if _, _, ok := c.Get("a"); !ok {
		t.Fatal("DropOlder of the cached version forgot it")
	}
	c.DropOlder("a", 3)
	if _, _, ok := c.Get("a"); ok {
		t.Fatal("DropOlder of a newer version kept it")
	}
	for i := range 10 {
		c.Put(rec(fmt.Sprint(i), 1), "")
	}
	if n := c.Len(); n != 3 {
		t.Fatalf("%d records kept, want Max 3", n)
	}
	c.Clear()
	if n := c.Len(); n != 0 {
		t.Fatalf("%d records after Clear", n)
	}
}
