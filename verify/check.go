package verify

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/value"
)

// recordChunk is how many key records a reader gathers before handing
// them to a sorter, so that the sorter's lock is taken rarely.
const recordChunk = 1024

// lookupItem is an expected item on its way to BatchGetItem.
type lookupItem struct {
	item mapping.Item
	ent  int
}

// check reads every entity's rows, builds their items, records their keys
// for the sweep and, unless pruning, looks the sampled rows' items up in
// the target and classifies them.
func (c *comparer) check(ctx context.Context) error {
	next, err := pipeline.SplitShards(ctx, c.in.Snapshot, c.reads, c.opts.ShardsPerEntity)
	if err != nil {
		return err
	}
	// Two batches per lookup worker: enough that a worker never waits for
	// the readers while another batch is being built.
	batches := make(chan []lookupItem, 2*c.opts.Lookups)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(batches)
		return pipeline.ReadShards(gctx, c.opts.Readers, next, func() pipeline.ShardReader[pipeline.ShardTask] {
			return &reader{c: c, out: batches, seen: map[string]bool{}}
		})
	})
	if c.opts.Mode != ModePrune {
		for range c.opts.Lookups {
			g.Go(func() error {
				for b := range batches {
					if err := c.lookup(gctx, b); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// reader reads shards and builds their rows' items. Each reader goroutine
// has its own.
type reader struct {
	c     *comparer
	out   chan<- []lookupItem
	items []mapping.Item
	// batch gathers items for one BatchGetItem; seen holds its keys, since
	// a request must not name a key twice.
	batch   []lookupItem
	seen    map[string]bool
	recs    [][]byte
	touched [][]byte
}

// ReadShard implements pipeline.ShardReader.
func (r *reader) ReadShard(ctx context.Context, t pipeline.ShardTask) error {
	ep := r.c.reads[t.Entity]
	retry := pipeline.Retry{Sleep: r.c.opts.Sleep,
		OnRetry: func(attempt int, err error) {
			r.c.opts.Logger.Warn("source connection lost; reading again after the last row", "entity", ep.Name, "attempt", attempt, "error", err)
		}}
	err := pipeline.ReadRetrying(ctx, r.c.in.Snapshot, ep, t.Range, nil, r.c.opts.PageSize, retry, func(row value.Row, nested [][]value.Row) error {
		return r.row(ctx, t.Entity, ep, row, nested)
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("reading entity %s: %w", ep.Name, err)
	}
	return err
}

func (r *reader) row(ctx context.Context, ent int, ep *mapping.EntityPlan, row value.Row, nested [][]value.Row) error {
	c := r.c
	et := c.tally.ents[ent]
	et.rows.Add(1)
	keep := c.sample.keep(row[:len(ep.KeyColumns)])
	if keep {
		et.sampled.Add(1)
	}
	var err error
	if c.keyOnly != nil && c.keyOnly[ent] {
		r.items, err = ep.BuildKeys(row, r.items[:0])
	} else {
		r.items, err = ep.BuildNested(row, nested, r.items[:0], nil)
	}
	if err != nil {
		var rerr *mapping.RowError
		if !errors.As(err, &rerr) {
			return fmt.Errorf("building items of entity %s: %w", ep.Name, err)
		}
		c.tally.rowError(ent, RowError{Entity: ep.Name, SourceKey: rerr.KeyString(), Attribute: rerr.Attribute, Reason: rerr.Reason})
		return nil
	}
	for _, it := range r.items {
		rec, _ := c.keys.keyRecord(nil, it.Attrs)
		r.recs = append(r.recs, rec)
		if keep && c.touched != nil {
			r.touched = append(r.touched, appendPK(nil, it.Attrs[c.keys.pk.Name]))
		}
		if keep && c.opts.Mode != ModePrune {
			if err := r.queue(ctx, lookupItem{item: it, ent: ent}); err != nil {
				return err
			}
		}
	}
	if len(r.recs) >= recordChunk || len(r.touched) >= recordChunk {
		return r.flushRecords()
	}
	return nil
}

// maxBatchGetKeys: BatchGetItem accepts at most 100 keys per request.
const maxBatchGetKeys = 100

// queue adds an item to the reader's batch and sends the batch when full.
func (r *reader) queue(ctx context.Context, li lookupItem) error {
	if r.seen[li.item.Key] {
		// The same key twice (two rows collide): it goes in the next request.
		if err := r.sendBatch(ctx); err != nil {
			return err
		}
	}
	r.batch = append(r.batch, li)
	r.seen[li.item.Key] = true
	if len(r.batch) == maxBatchGetKeys {
		return r.sendBatch(ctx)
	}
	return nil
}

func (r *reader) sendBatch(ctx context.Context) error {
	if len(r.batch) == 0 {
		return nil
	}
	select {
	case r.out <- r.batch:
	case <-ctx.Done():
		return ctx.Err()
	}
	r.batch = make([]lookupItem, 0, maxBatchGetKeys)
	clear(r.seen)
	return nil
}

func (r *reader) flushRecords() error {
	if len(r.recs) > 0 {
		if err := r.c.expected.add(r.recs); err != nil {
			return err
		}
		r.recs = make([][]byte, 0, recordChunk)
	}
	if len(r.touched) > 0 {
		if err := r.c.touched.add(r.touched); err != nil {
			return err
		}
		r.touched = make([][]byte, 0, recordChunk)
	}
	return nil
}

// flush hands over what the reader still holds, after its last shard.
// Finish implements pipeline.ShardReader: what the reader holds goes on.
func (r *reader) Finish(ctx context.Context) error { return r.flush(ctx) }

func (r *reader) flush(ctx context.Context) error {
	if err := r.flushRecords(); err != nil {
		return err
	}
	return r.sendBatch(ctx)
}
