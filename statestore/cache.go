package statestore

import (
	"context"
	"hash/maphash"
	"sync"
)

// DefaultCacheRows is how many rows' index entries Cached keeps by
// default: at some 90 bytes a row with one item key of 30 bytes (the
// portfolios design's databases: BenchmarkCachedMemoryPerRow), about
// 23 MB.
const DefaultCacheRows = 250_000

// CacheRowBudget is the memory a cached row may take at most, in bytes,
// with room for the maps' and slices' growth: what sync adds to its soft
// memory limit per row of --index-cache.
const CacheRowBudget = 160

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
// It holds at most rows entries, in two generations. Entries are added to
// the current one; a full cache makes room by dropping entries of the old
// one, a slice of its size at a time, and when the old one is empty the
// current one becomes the old one. A hit in the old generation moves the
// entry back to the current one, so the rows in use since the last turn
// stay, at the cost of one map of memory over a strict
// least-recently-used list, with no list to keep. Nothing is dropped until
// the cache holds rows entries, so an index of up to rows rows stays whole.
type Cached struct {
	Store
	rows int

	// ready is closed once the warm-up is over (see Warm); until then
	// the row index is not read or written through the cache.
	ready chan struct{}

	// reads lets one Keys call at a time read the store: a call that
	// makes room in the cache (forgets) keeps every other call in flight
	// from keeping what it read, so concurrent readers of disjoint rows
	// (a sync round's slices read at once) would miss on the same rows
	// round after round.
	reads    sync.Mutex
	mu       sync.Mutex
	seed     maphash.Seed
	cur, old *gen
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
	ready := make(chan struct{})
	close(ready)
	seed := maphash.MakeSeed()
	return &Cached{Store: store, rows: rows, ready: ready, seed: seed, cur: newGen(), old: newGen()}
}

// Keys answers what the cache holds and asks the store for the rest.
func (c *Cached) Keys(ctx context.Context, entity string, rows [][]byte) ([][]string, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	c.reads.Lock()
	defer c.reads.Unlock()
	out := make([][]string, len(rows))
	var missing [][]byte
	var at []int
	c.mu.Lock()
	for i, r := range rows {
		if keys, ok := c.lookup(newRowRef(c.seed, entity, r)); ok || c.complete {
			out[i] = keys
			continue
		}
		missing = append(missing, r)
		at = append(at, i)
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
		if r := newRowRef(c.seed, entity, missing[j]); keep && !c.cur.has(r) && !c.old.has(r) {
			c.put(r, got[j])
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
		r := newRowRef(c.seed, e.Entity, e.Row)
		if err != nil {
			c.cur.del(r)
			c.old.del(r)
			c.forgets++
			c.complete = false
			continue
		}
		c.put(r, e.Keys)
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
	c.cur, c.old = newGen(), newGen()
	c.forgets++
	c.complete = false
	c.mu.Unlock()
	err := c.Store.ClearKeys(ctx)
	c.mu.Lock()
	c.complete = err == nil && c.cur.len() == 0
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

// lookup finds the row in either generation, moving an old entry to the
// current one. Callers hold mu.
func (c *Cached) lookup(r rowRef) ([]string, bool) {
	if keys, ok := c.cur.get(r); ok {
		return keys, true
	}
	keys, ok := c.old.get(r)
	if ok {
		c.old.del(r)
		c.put(r, keys)
	}
	return keys, ok
}

// put records the row's keys in the current generation, making room
// first when the cache is full. Callers hold mu.
func (c *Cached) put(r rowRef, keys []string) {
	if !c.cur.has(r) && !c.old.has(r) && c.cur.len()+c.old.len() >= c.rows {
		c.makeRoom()
	}
	if c.cur.set(r, keys) {
		// Another row had the same hash: it is no longer held.
		c.forgets++
		c.complete = false
	}
	c.old.del(r)
}

// makeRoom drops a sixteenth of the cache's rows (at least one) from the
// old generation, turning the current one into the old one first when the
// old one is empty. Callers hold mu.
func (c *Cached) makeRoom() {
	if c.old.len() == 0 {
		c.old, c.cur = c.cur, newGen()
	}
	c.old.drop(max(c.rows/16, 1))
	c.forgets++
	c.complete = false
}
