package store

import "sync"

// DefaultCacheSize is how many records a RecordCache with Max 0 holds.
const DefaultCacheSize = 1024

// RecordCache is a bounded map of records by id, safe for concurrent use.
// It stores and returns records as they are given: callers that modify
// them, or keep ones they go on modifying, clone. When full, Put forgets
// an arbitrary record first. The zero value is empty and holds up to
// DefaultCacheSize records.
type RecordCache struct {
	// Max bounds the records held; 0 means DefaultCacheSize. Set it
	// before the first Put.
	Max int

	mu sync.Mutex
	m  map[string]Record
}

// Get returns the record cached for id.
func (c *RecordCache) Get(id string) (Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[id]
	return r, ok
}

// Put caches r under r.ID, replacing what was cached for it.
func (c *RecordCache) Put(r Record) {
	limit := c.Max
	if limit <= 0 {
		limit = DefaultCacheSize
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]Record)
	}
	if _, ok := c.m[r.ID]; !ok && len(c.m) >= limit {
		for id := range c.m {
			delete(c.m, id)
			break
		}
	}
	c.m[r.ID] = r
}

// Drop forgets id.
func (c *RecordCache) Drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}

// Clear forgets every record.
func (c *RecordCache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
}

// Len returns how many records are cached.
func (c *RecordCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
