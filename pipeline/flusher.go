package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/dynafold/dynafold/sink"
)

// flushIdle is how long the writers must have begun no Write, while the
// run waits on acknowledgements, before the flusher asks the sink to make
// what it holds durable. Short, so that a stalled run moves again at
// once; long enough that a busy run is not flushed into small pieces.
const flushIdle = 50 * time.Millisecond

// flusher keeps a sink that acknowledges late from stalling the run. The
// readers stop when the rows in flight reach the budget, and a split
// aggregate's head waits for its parts: if the sink holds the very items
// whose acknowledgement they wait for, nothing moves until it flushes. So
// when a reader is starved or a head is held, and no Write has begun for
// flushIdle, the sink is flushed. A sink that acknowledges on Write has
// nothing to flush and the call costs nothing.
func (r *run) flusher(ctx context.Context, writersDone <-chan struct{}) error {
	tick := time.NewTicker(flushIdle)
	defer tick.Stop()
	seen := r.writers.Begun()
	for {
		select {
		case <-writersDone:
			return nil
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now := r.writers.Begun()
		waiting := r.starved.Load() > 0 || !r.gates.idle()
		if now == seen && waiting {
			if err := r.flushSink(ctx); err != nil {
				return err
			}
		}
		seen = now
	}
}

// flushSink flushes the sink, with the writers' view of its errors: an
// error after the grace period of a stop is no error (what it did not
// acknowledge is read again on resume).
func (r *run) flushSink(ctx context.Context) error {
	if err := r.job.Sink.Flush(ctx); err != nil {
		if r.interrupted.Load() && ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, sink.ErrGaveUp) {
			return &ResumableError{Err: err}
		}
		return err
	}
	if perr := r.writerErr.Load(); perr != nil {
		return *perr
	}
	return nil
}

var _ sink.Checkpointed = (*ticket)(nil)
