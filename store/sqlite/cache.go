package sqlite

import "github.com/slackask/slackask/store"

// recordCache holds the latest record this Store wrote for an id (up to
// store.DefaultCacheSize, about 3 KB each: enough for every ask people are
// answering at once), so that Update does not read and decode the whole
// record again: it checks the version in the row (a primary key lookup)
// and uses the cached record only when they match, so a write by another
// Store on the same file is never missed. Records go in and come out as
// deep copies. The zero value is empty and ready.
type recordCache struct {
	c   store.RecordCache
	off bool // holds nothing: the A/B benchmark's "without"
}

// get returns a deep copy of the cached record for id.
func (c *recordCache) get(id string) (store.Record, bool) {
	if c.off {
		return store.Record{}, false
	}
	r, ok := c.c.Get(id)
	if !ok {
		return store.Record{}, false
	}
	return store.Clone(r), true
}

// put caches a deep copy of r.
func (c *recordCache) put(r store.Record) {
	if !c.off {
		c.c.Put(store.Clone(r))
	}
}

// drop forgets id.
func (c *recordCache) drop(id string) { c.c.Drop(id) }

// clear forgets everything.
func (c *recordCache) clear() { c.c.Clear() }
