package statestore

import (
	"context"
	"time"
)

// WarmStats is what a warm-up read: the rows it put in the cache, how
// long it took, whether they were the whole index (the cache then
// answers rows it does not hold as having no entry), and its error, if
// it failed (the cache then starts empty).
type WarmStats struct {
	Rows    int64   `json:"rows"`
	Seconds float64 `json:"seconds"`
	All     bool    `json:"whole_index"`
	Err     error   `json:"-"`
}

// Warm reads the store's row index into the cache in the background, when
// the store can list it (Lister) in one pass; done is called with what it
// read. Until it is over, Keys, SetKeys and ClearKeys wait. It must be
// called before the cache is used, and only at the start of a hold: the
// listing must not race another holder's writes.
//
// It pays where the cache is in front of DynamoDB: the listing reads a
// row for a fraction of what reading it alone costs, it runs while sync
// reads the source's first changes, and when the index fits in the cache
// every later lookup is answered from memory, rows never seen (new ones)
// included. An index larger than the cache is listed only up to the
// cache's size: those rows are kept, and the rest are read as they are
// asked for.
func (c *Cached) Warm(ctx context.Context, done func(WarmStats)) {
	lister, ok := c.Store.(Lister)
	if !ok {
		return
	}
	ready := make(chan struct{})
	c.ready = ready
	go func() {
		defer close(ready)
		started := time.Now()
		c.mu.Lock()
		// put clears it when it drops rows.
		c.complete = true
		c.mu.Unlock()
		var rows int64
		all, err := lister.ListKeys(ctx, c.rows, func(entity string, row []byte, keys []string) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.put(newRowRef(c.seed, entity, row), keys)
			rows++
		})
		c.mu.Lock()
		if err != nil {
			// What was listed is true of the index, but the cache
			// starts as if it had not been.
			c.cur, c.old = newGen(), newGen()
			c.forgets++
			rows = 0
		}
		c.complete = c.complete && err == nil && all
		c.warm = WarmStats{Rows: rows, Seconds: time.Since(started).Seconds(), All: c.complete, Err: err}
		stats := c.warm
		c.mu.Unlock()
		if done != nil {
			done(stats)
		}
	}()
}

// Warmed returns what the warm-up read (zero without one).
func (c *Cached) Warmed() WarmStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.warm
}

// wait returns once the warm-up is over, or ctx's error.
func (c *Cached) wait(ctx context.Context) error {
	select {
	case <-c.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
