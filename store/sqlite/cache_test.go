package sqlite

import (
	"fmt"
	"testing"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

func TestRecordCache(t *testing.T) {
	var c recordCache
	if _, ok := c.get("a"); ok {
		t.Fatal("the zero cache holds a record")
	}
	r := store.Record{Ask: interaction.Ask{ID: "a", Questions: []interaction.Question{{ID: "q"}}}, Progress: []interaction.Progress{{Selected: []string{"x"}}}}
	c.put(r)
	r.Questions[0].ID, r.Progress[0].Selected[0] = "changed", "changed"
	got, ok := c.get("a")
	if !ok || got.Questions[0].ID != "q" || got.Progress[0].Selected[0] != "x" {
		t.Fatalf("the cache shares memory with what was put: %+v", got)
	}
	got.Progress[0].Selected[0] = "changed"
	if again, _ := c.get("a"); again.Progress[0].Selected[0] != "x" {
		t.Fatal("the cache shares memory with what get returned")
	}
	c.drop("a")
	if _, ok := c.get("a"); ok {
		t.Fatal("dropped record still cached")
	}
	for i := range recordCacheSize + 50 {
		c.put(store.Record{Ask: interaction.Ask{ID: fmt.Sprint(i)}})
	}
	if len(c.m) != recordCacheSize {
		t.Fatalf("%d records cached, want at most %d", len(c.m), recordCacheSize)
	}
	c.clear()
	if len(c.m) != 0 {
		t.Fatal("clear left records")
	}
}
