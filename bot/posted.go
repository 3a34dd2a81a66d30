package bot

import (
	"sync"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// postedCacheSize bounds the asks postedCache holds (a few KB each).
const postedCacheSize = 1024

// postedCache keeps pending, posted asks as they were when a click first
// loaded them, so that the next clicks are judged without a store read.
// Only what never changes once an ask is posted may be read from an entry
// (ids, where it was posted, who may answer, the questions); its progress
// is cleared. end drops the ask, so an entry is never an ended ask of this
// process; state changes still compare-and-set in the store, so a click
// racing the end is refused there. The zero value is ready to use.
type postedCache struct {
	mu sync.Mutex
	m  map[string]store.Record
}

func (c *postedCache) get(id string) (store.Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.m[id]
	return rec, ok
}

// put remembers rec if it is pending and posted; when full it forgets an
// arbitrary entry first.
func (c *postedCache) put(rec store.Record) {
	if rec.Status != interaction.StatusPending || rec.TS == "" {
		return
	}
	rec = store.Clone(rec)
	rec.Progress = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]store.Record{}
	}
	if _, ok := c.m[rec.ID]; !ok && len(c.m) >= postedCacheSize {
		for id := range c.m {
			delete(c.m, id)
			break
		}
	}
	c.m[rec.ID] = rec
}

func (c *postedCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}
