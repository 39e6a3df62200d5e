package pipeline

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
)

// DefaultPageSize is the rows per keyset page of every command that reads
// the source, unless --page-size says otherwise: large enough that a page
// costs one round trip among thousands of rows, small enough that a page
// of wide rows stays a few megabytes.
const DefaultPageSize = 2000

// ShardReader reads the shards one reader goroutine is given. Each
// goroutine has its own, so that it may keep unsynchronized state
// (buffers, a batch being filled).
type ShardReader[T any] interface {
	// ReadShard reads one shard. An error stops every reader.
	ReadShard(ctx context.Context, task T) error
	// Finish is called after the goroutine's last shard, unless a shard
	// failed: what the reader still holds is handed on.
	Finish(ctx context.Context) error
}

// ReadShards is the reader pool of migrate, verify and plan: readers
// goroutines, each with the ShardReader newReader gives it, take shards
// from next until it has none (ok false) and read them. It returns the
// first error; the other readers then stop through their context.
func ReadShards[T any](ctx context.Context, readers int, next func(context.Context) (task T, ok bool, err error), newReader func() ShardReader[T]) error {
	g, gctx := errgroup.WithContext(ctx)
	for range max(readers, 1) {
		g.Go(func() error {
			r := newReader()
			for {
				task, ok, err := next(gctx)
				if err != nil {
					return err
				}
				if !ok {
					return r.Finish(gctx)
				}
				if err := r.ReadShard(gctx, task); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}

// ShardTask is one key range of one entity (by its index in the plan, or
// in the entity list SplitShards was given).
type ShardTask struct {
	Entity int
	Range  source.Range
}

// SplitShards splits every entity of entities into perEntity key ranges and
// returns a next function for ReadShards that hands them out in order:
// the shards of verify and plan, which keep no checkpoint (migrate claims
// its shards from the checkpoint store).
func SplitShards(ctx context.Context, snap source.Snapshot, entities []*mapping.EntityPlan, perEntity int) (func(context.Context) (ShardTask, bool, error), error) {
	var tasks []ShardTask
	for i, ep := range entities {
		shards, err := snap.Shards(ctx, ep.Query, perEntity)
		if err != nil {
			return nil, fmt.Errorf("splitting entity %s into shards: %w", ep.Name, err)
		}
		for _, r := range shards {
			tasks = append(tasks, ShardTask{Entity: i, Range: r})
		}
	}
	queue := make(chan ShardTask, len(tasks))
	for _, t := range tasks {
		queue <- t
	}
	close(queue)
	return func(context.Context) (ShardTask, bool, error) {
		t, ok := <-queue
		return t, ok, nil
	}, nil
}
