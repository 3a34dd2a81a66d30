package sqlite

import (
	"testing"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// The cache shares no memory with what goes in or comes out.
func TestRecordCacheCopies(t *testing.T) {
	var c recordCache
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
	c.put(r)
	c.clear()
	if _, ok := c.get("a"); ok {
		t.Fatal("clear left a record")
	}
}
