// Package reccache is the bounded cache of decoded records the SQL stores
// keep of what they last wrote, so that an Update need not read and decode
// the row again when nothing was written since.
package reccache

import (
	"cmp"
	"sync"

	"github.com/slackask/slackask/store"
)

// Size bounds the records a Cache keeps unless its Max says otherwise:
// enough for the asks people are answering at the same moment. Most pending asks are not being clicked,
// and a larger cache would hold their records in the heap for nothing
// (BENCHMARKS.md, "Pieces"; the measurements: commit 478fefb).
const Size = 128

// Cache keeps, per id, a record as a store wrote it and a tag of type T
// the store tells that row version by (PostgreSQL: the row's xmin and
// loud_xmin; SQLite: none). The store decides whether the row still is
// that record (its version, and tag); a Cache only remembers. Records go in and come out as deep
// copies. When full, Put forgets an arbitrary record. The zero value is
// empty and ready; it is safe for concurrent use.
type Cache[T any] struct {
	// Max bounds the records kept; 0 is Size. Set it before first use.
	Max int

	mu sync.Mutex
	m  map[string]entry[T]
}

type entry[T any] struct {
	r   store.Record
	tag T
}

// Get returns a deep copy of the record cached for id, and its tag.
func (c *Cache[T]) Get(id string) (store.Record, T, bool) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if !ok {
		var none T
		return store.Record{}, none, false
	}
	return store.Clone(e.r), e.tag, true
}

// Put caches a deep copy of r under r.ID, with tag.
func (c *Cache[T]) Put(r store.Record, tag T) {
	r = store.Clone(r)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]entry[T])
	}
	if _, ok := c.m[r.ID]; !ok && len(c.m) >= cmp.Or(c.Max, Size) {
		for id := range c.m {
			delete(c.m, id)
			break
		}
	}
	c.m[r.ID] = entry[T]{r, tag}
}

// Drop forgets id.
func (c *Cache[T]) Drop(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

// DropOlder forgets id if its cached version is below version: a write
// made elsewhere was heard of.
func (c *Cache[T]) DropOlder(id string, version int64) {
	c.mu.Lock()
	if e, ok := c.m[id]; ok && e.r.Version < version {
		delete(c.m, id)
	}
	c.mu.Unlock()
}

// Clear forgets every record.
func (c *Cache[T]) Clear() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}

// Len is how many records are cached.
func (c *Cache[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
