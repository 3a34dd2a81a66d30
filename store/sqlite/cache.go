package sqlite

import (
	"sync"

	"github.com/slackask/slackask/store"
)

// recordCacheSize bounds the decoded records a Store keeps: enough for the
// asks people are answering at the same moment. Most pending asks are not
// being clicked, and a larger cache would hold their records in the heap
// for nothing (BENCHMARKS.md, "Pieces"; the measurements: commit 478fefb).
const recordCacheSize = 128

// recordCache keeps the record this Store last wrote for an id, decoded,
// so that Update need not decode the row's JSON again: Update reads the
// row's version and uses the cached record only when they match (every
// write bumps the version, so nothing written since is missed). Records go
// in and come out as deep copies. When full, put forgets an arbitrary
// record. The zero value is empty and ready; it is safe for concurrent use.
type recordCache struct {
	mu sync.Mutex
	m  map[string]store.Record
}

// get returns a deep copy of the record cached for id.
func (c *recordCache) get(id string) (store.Record, bool) {
	c.mu.Lock()
	r, ok := c.m[id]
	c.mu.Unlock()
	if !ok {
		return store.Record{}, false
	}
	return store.Clone(r), true
}

// put caches a deep copy of r under r.ID.
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

// len is how many records are cached.
func (c *recordCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
