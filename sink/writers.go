package sink

import (
	"context"
	"slices"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/mapping"
)

// defaultWriters is how many Write calls Writers keeps in flight when N is
// not set: the --writers default of migrate and sync.
const defaultWriters = 8

// Writers is the one way items are written to a sink: a fixed number of
// concurrent Write calls that share one context, stop at the first error
// and return once every call has returned. The pipeline streams batches
// through Run as its batcher makes them; cdc writes a round's set of items
// with WriteSet and waits for every acknowledgement.
//
// A Writers may be used again once Run or WriteSet has returned, and by
// several Run and WriteSet calls at once (they share only N and Begun).
type Writers struct {
	// Sink is what the batches are written to.
	Sink Sink
	// N is how many Write calls are in flight at most (defaultWriters
	// when not set).
	N int
	// Check, when set, is called after every Write that returned nil; an
	// error it returns stops the writers as a Write error would. The
	// pipeline returns there a verdict its Results reached inside a
	// callback (an on_error policy that ends the run).
	Check func() error

	begun atomic.Int64
}

// Begun is how many Write calls have begun: a flusher that finds it
// unchanged knows no batch was handed to the sink since it last looked.
func (w *Writers) Begun() int64 { return w.begun.Load() }

func (w *Writers) n() int {
	if w.N <= 0 {
		return defaultWriters
	}
	return w.N
}

// Run writes every batch received from in with up to N Write calls at
// once, and returns nil once in is closed and every call has returned, or
// the first error (of Write or Check), which cancels the other calls.
// Items not acknowledged by then were not written (Sink.Write). The
// sender closes in; Run stops receiving once ctx is done. Errors are the
// sink's own: ErrGaveUp, *UnreachableError and the rest are for the
// caller to classify.
func (w *Writers) Run(ctx context.Context, in <-chan []*mapping.Item, res Results) error {
	return w.run(ctx, in, res, w.n())
}

func (w *Writers) run(ctx context.Context, in <-chan []*mapping.Item, res Results, n int) error {
	g, gctx := errgroup.WithContext(ctx)
	for range n {
		g.Go(func() error {
			for {
				var batch []*mapping.Item
				select {
				case b, ok := <-in:
					if !ok {
						return nil
					}
					batch = b
				case <-gctx.Done():
					return gctx.Err()
				}
				w.begun.Add(1)
				if err := w.Sink.Write(gctx, batch, res); err != nil {
					return err
				}
				if w.Check != nil {
					if err := w.Check(); err != nil {
						return err
					}
				}
			}
		})
	}
	return g.Wait()
}

// WriteSet writes items (distinct keys), in batches of at most
// MaxBatchItems, with up to N Write calls at once, and returns nil once
// every item is acknowledged or rejected (res hears which), or the first
// error; the sink is flushed, so that one that acknowledges late
// acknowledges them before WriteSet returns. Parts come before heads
// (HeadsLast): every head of a split aggregate is written only after
// every other item of the set is acknowledged.
//
// Each batch is a window of items, which nothing changes before WriteSet
// returns: a retried request sends what was built.
func (w *Writers) WriteSet(ctx context.Context, items []*mapping.Item, res Results) error {
	rest, heads := HeadsLast(items)
	for _, group := range [2][]*mapping.Item{rest, heads} {
		if len(group) == 0 {
			continue
		}
		// Every batch is queued before the writers start, so no goroutine
		// feeds them, and no more writers start than there are batches.
		nb := (len(group) + MaxBatchItems - 1) / MaxBatchItems
		batches := make(chan []*mapping.Item, nb)
		for b := range slices.Chunk(group, MaxBatchItems) {
			batches <- b
		}
		close(batches)
		if err := w.run(ctx, batches, res, min(w.n(), nb)); err != nil {
			return err
		}
		if err := w.Sink.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}
