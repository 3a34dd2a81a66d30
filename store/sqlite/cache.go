package sqlite

import (
	"sync"

	"github.com/slackask/slackask/store"
)

// recordCacheSize bounds the records Update keeps decoded: enough for
// every ask people are answering at once, about 3 KB each.
const recordCacheSize = 1024

// recordCache holds the latest record this Store wrote or read for an id,
// so that Update does not read and decode the whole record again: it
// checks the version in the row (a primary key lookup) and uses the cached
// record only when they match, so a write by another Store on the same
// file is never missed. It is safe for concurrent use; the zero value is
// empty and ready.
type recordCache struct {
	mu sync.Mutex
	m  map[string]store.Record
}

// get returns a deep copy of the cached record for id.
func (c *recordCache) get(id string) (store.Record, bool) {
	c.mu.Lock()
	r, ok := c.m[id]
	c.mu.Unlock()
	if !ok {
		return store.Record{}, false
	}
	return store.Clone(r), true
}

// put caches a deep copy of r, evicting an arbitrary entry when full.
func (c *recordCache) put(r store.Record) {
	r = store.Clone(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]store.Record)
	}
	if _, ok := c.m[r.ID]; !ok && len(c.m) >= recordCacheSize {
		for id := range c.m {
			delete(c.m, id)
			break
		}
	}
	c.m[r.ID] = r
}

// drop forgets id.
func (c *recordCache) drop(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// clear forgets everything.
func (c *recordCache) clear() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}
