package sqlite

import (
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/internal/reccache"
)

// recordCacheSize bounds the decoded records a Store keeps (reccache.Size).
const recordCacheSize = reccache.Size

// recordCache keeps the record this Store last wrote for an id, decoded,
// so that Update need not decode the row's JSON again: Update reads the
// row's version and uses the cached record only when they match (every
// write bumps the version, so nothing written since is missed).
type recordCache struct{ c reccache.Cache[struct{}] }

// get returns a deep copy of the record cached for id.
func (c *recordCache) get(id string) (store.Record, bool) {
	r, _, ok := c.c.Get(id)
	return r, ok
}

// put caches a deep copy of r under r.ID.
func (c *recordCache) put(r store.Record) { c.c.Put(r, struct{}{}) }

// drop forgets id.
func (c *recordCache) drop(id string) { c.c.Drop(id) }

// len is how many records are cached.
func (c *recordCache) len() int { return c.c.Len() }
