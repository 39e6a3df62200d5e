package plan

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/cespare/xxhash/v2"
	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// batchRows is how many rows' observations a reader hands over at once;
// small enough to keep the aggregator busy, large enough to make channel
// operations rare.
const batchRows = 256

// Measure reads every entity of the plan through snap once, builds each
// row's items as migrate would, and accumulates what the report needs. It
// holds bounded memory whatever the size of the source.
func Measure(ctx context.Context, p *mapping.Plan, snap source.Snapshot, opts Options) (*Stats, error) {
	opts.defaults()
	obs := &observer{tbl: p.Table, shapes: indexShapes(p.Table), lim: opts.Limits}
	agg := newAggregator(p, obs.shapes, opts)
	next, err := pipeline.SplitShards(ctx, snap, p.Entities, opts.ShardsPerEntity)
	if err != nil {
		return nil, err
	}
	// Buffers of two batches per reader keep readers from waiting on the
	// aggregator's occasional slow step (a map growing).
	out := make(chan []rowObs, 2*opts.Readers)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(out)
		return pipeline.ReadShards(gctx, opts.Readers, next, func() pipeline.ShardReader[pipeline.ShardTask] {
			return &reader{p: p, snap: snap, obs: obs, opts: &opts, out: out}
		})
	})
	g.Go(func() error {
		for batch := range out {
			agg.add(batch)
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return agg.stats(), nil
}

// reader reads shards and observes their rows.
type reader struct {
	p     *mapping.Plan
	snap  source.Snapshot
	obs   *observer
	opts  *Options
	out   chan<- []rowObs
	batch []rowObs
	items []mapping.Item
}

// ReadShard implements pipeline.ShardReader; each shard's observations
// are handed on when it ends.
func (r *reader) ReadShard(ctx context.Context, t pipeline.ShardTask) error {
	ep := r.p.Entities[t.Entity]
	retry := pipeline.Retry{}
	err := pipeline.ReadRetrying(ctx, r.snap, ep, t.Range, nil, r.opts.PageSize, retry, func(row value.Row, nested [][]value.Row) error {
		return r.row(ctx, t.Entity, ep, row, nested)
	})
	if err != nil {
		return fmt.Errorf("reading entity %s: %w", ep.Name, err)
	}
	return r.flush(ctx)
}

// Finish implements pipeline.ShardReader: ReadShard handed everything on.
func (r *reader) Finish(context.Context) error { return nil }

func (r *reader) row(ctx context.Context, ent int, ep *mapping.EntityPlan, row value.Row, nested [][]value.Row) error {
	key := row[:len(ep.KeyColumns)]
	if r.opts.Sample < 1 && !sampled(key, r.opts.Sample) {
		return r.push(ctx, rowObs{ent: -1 - ent}) // read, not sampled: counted only as read
	}
	// Only the key is kept: a row can be hundreds of kilobytes, and
	// observations wait in batches for the aggregator.
	ro := rowObs{ent: ent, srcKey: append([]value.Value(nil), key...)}
	var err error
	r.items, err = ep.BuildNested(row, nested, r.items[:0], nil)
	var rerr *mapping.RowError
	switch {
	case err == nil:
		if ro.viol = r.obs.check(ep, r.items); len(ro.viol) == 0 {
			ro.items = r.obs.items(r.items, nil)
		}
	case errors.As(err, &rerr):
		// Build refuses items over DynamoDB's limits; measure the row
		// without them to say by how much it is over.
		if r.items, err = ep.BuildUnchecked(row, nested, r.items[:0]); err == nil {
			ro.viol = r.obs.check(ep, r.items)
		}
		if len(ro.viol) == 0 {
			rerr.Row = nil // the report names the row by its key
			ro.rowErr = rerr
		}
	default:
		return err
	}
	clear(r.items[:cap(r.items)]) // let the built items go; the buffer is reused
	return r.push(ctx, ro)
}

func (r *reader) push(ctx context.Context, ro rowObs) error {
	r.batch = append(r.batch, ro)
	if len(r.batch) >= batchRows {
		return r.flush(ctx)
	}
	return nil
}

func (r *reader) flush(ctx context.Context) error {
	if len(r.batch) == 0 {
		return nil
	}
	select {
	case r.out <- r.batch:
		r.batch = make([]rowObs, 0, batchRows)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sampled decides, from a hash of the row's primary key, whether the row
// is in the sample: the same rows are chosen on every run.
func sampled(key []value.Value, fraction float64) bool {
	h := xxhash.New()
	for _, v := range key {
		_, _ = h.WriteString(v.Kind.String())
		_, _ = h.Write([]byte{0})
		_, _ = h.WriteString(v.Text())
		_, _ = h.Write([]byte{0})
	}
	return float64(h.Sum64()) < fraction*math.MaxUint64
}
