package bot

import (
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// postedCache keeps pending, posted asks as they were when a click first
// loaded them (up to store.DefaultCacheSize, a few KB each), so that the
// next clicks are judged without a store read. Only what never changes
// once an ask is posted may be read from an entry (ids, where it was
// posted, who may answer, the questions); its progress is cleared. end
// drops the ask, so an entry is never an ended ask of this process; state
// changes still compare-and-set in the store, so a click racing the end is
// refused there. Entries are shared: read-only. The zero value is ready to
// use.
type postedCache struct{ c store.RecordCache }

func (c *postedCache) get(id string) (store.Record, bool) { return c.c.Get(id) }

// put remembers a copy of rec if it is pending and posted.
func (c *postedCache) put(rec store.Record) {
	if rec.Status != interaction.StatusPending || rec.TS == "" {
		return
	}
	rec = store.Clone(rec)
	rec.Progress = nil
	c.c.Put(rec)
}

func (c *postedCache) drop(id string) { c.c.Drop(id) }
