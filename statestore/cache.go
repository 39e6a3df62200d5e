package statestore

import (
	"context"
	"slices"
	"sync"
)

// DefaultCacheRows is how many rows' index entries Cached keeps by
// default: at some 170 bytes a row with one item key of 30 bytes (the
// portfolios design's databases: BenchmarkCachedMemoryPerRow), about
// 43 MB.
const DefaultCacheRows = 250_000

// Cached keeps in memory the row-index entries a sync has read or
// written, in front of a store that nothing else writes while this sync
// holds it: DynamoDB, under the lease (a sync that loses the lease stops
// writing and makes a new Cached when it takes the lease again, so a
// cache never outlives the hold it was filled under), or the files, under
// their lock. A row that changes again soon, which is most of a live
// workload's rows, is then read from memory instead of the store: a
// BatchGetItem key saved per change. Sync puts it in front of DynamoDB
// only; a miss costs about what a bbolt read of the local index does
// (CPU profile of a fan-out), so there it would save nothing.
//
// It holds at most rows entries in two generations: entries are added to
// the current one, and when it is full it becomes the old one, the older
// one dropped. A hit in the old generation moves the entry back to the
// current one, so the rows in use stay, at the cost of one map of memory
// over a strict least-recently-used list, with no list to keep.
type Cached struct {
	Store
	half int

	// ready is closed once the warm-up is over (see Warm); until then
	// the row index is not read or written through the cache.
	ready chan struct{}

	mu       sync.Mutex
	cur, old map[string][]string
	// complete says the cache holds every row the store's index holds, so
	// that a row it does not hold has no entry and is not asked for: from
	// a warm-up that listed the whole index, or a clear, until an entry
	// leaves the cache.
	complete bool
	warm     WarmStats
	// forgets counts the times entries left the cache other than by being
	// replaced (a failed write's rows, a generation dropped): a store
	// read that overlapped one may have read a row's entry from before a
	// write the cache no longer shows, so what it read is not kept.
	forgets int64
	hits    int64
	misses  int64
}

// NewCached returns store with a cache of rows entries in front of its
// row index; rows <= 0 returns store itself.
func NewCached(store Store, rows int) Store {
	if rows <= 0 {
		return store
	}
	half := max(rows/2, 1)
	ready := make(chan struct{})
	close(ready)
	return &Cached{Store: store, half: half, ready: ready, cur: make(map[string][]string), old: map[string][]string{}}
}

// cacheKey is entity and row as one map key; the zero byte cannot occur
// in an entity name.
func cacheKey(entity string, row []byte) string {
	return entity + "\x00" + string(row)
}

// Keys answers what the cache holds and asks the store for the rest.
func (c *Cached) Keys(ctx context.Context, entity string, rows [][]byte) ([][]string, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	out := make([][]string, len(rows))
	var missing [][]byte
	var at []int
	var mkeys []string
	c.mu.Lock()
	for i, r := range rows {
		k := cacheKey(entity, r)
		if keys, ok := c.lookup(k); ok || c.complete {
			out[i] = keys
			continue
		}
		missing = append(missing, r)
		at = append(at, i)
		mkeys = append(mkeys, k)
	}
	c.hits += int64(len(rows) - len(missing))
	c.misses += int64(len(missing))
	forgets := c.forgets
	c.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	got, err := c.Store.Keys(ctx, entity, missing)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	keep := c.forgets == forgets
	for j, i := range at {
		out[i] = got[j]
		// A row written while it was read is in the cache already, newer
		// than what was read.
		if k := mkeys[j]; keep {
			if _, ok := c.cur[k]; !ok {
				if _, ok := c.old[k]; !ok {
					c.put(k, got[j])
				}
			}
		}
	}
	return out, nil
}

// SetKeys writes through. A write that fails may or may not have reached
// the store, so its rows are forgotten and read from the store next time.
func (c *Cached) SetKeys(ctx context.Context, entries []Entry) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	err := c.Store.SetKeys(ctx, entries)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		k := cacheKey(e.Entity, e.Row)
		if err != nil {
			delete(c.cur, k)
			delete(c.old, k)
			c.forgets++
			c.complete = false
			continue
		}
		var keys []string
		if len(e.Keys) > 0 {
			keys = slices.Clone(e.Keys)
		}
		c.put(k, keys)
	}
	return err
}

// ClearKeys forgets the store's index and the cache. Once the store's
// index is empty, the cache holds all of it.
func (c *Cached) ClearKeys(ctx context.Context) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	c.cur, c.old = map[string][]string{}, map[string][]string{}
	c.forgets++
	c.complete = false
	c.mu.Unlock()
	err := c.Store.ClearKeys(ctx)
	c.mu.Lock()
	c.complete = err == nil && len(c.cur) == 0
	c.mu.Unlock()
	return err
}

// Stats returns how many row lookups the cache answered and how many it
// passed to the store.
func (c *Cached) Stats() (hits, misses int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// Unwrap returns the store behind the cache.
func (c *Cached) Unwrap() Store { return c.Store }

// lookup finds k in either generation, moving an old entry to the
// current one. Callers hold mu.
func (c *Cached) lookup(k string) ([]string, bool) {
	if keys, ok := c.cur[k]; ok {
		return keys, true
	}
	keys, ok := c.old[k]
	if ok {
		delete(c.old, k)
		c.put(k, keys)
	}
	return keys, ok
}

// put records k in the current generation, turning it into the old one
// when full. Callers hold mu.
func (c *Cached) put(k string, keys []string) {
	if _, ok := c.cur[k]; !ok && len(c.cur) >= c.half {
		if len(c.old) > 0 {
			c.complete = false
		}
		c.old, c.cur = c.cur, make(map[string][]string, c.half/4)
		c.forgets++
	}
	c.cur[k] = keys
	delete(c.old, k)
}
