package cdc

import (
	"context"
	"errors"
	"time"

	"github.com/dynafold/dynafold/metrics"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/statestore"
)

// Lease keeps one sync writing a shared state (statestore.Lease).
type Lease interface {
	// Take waits until this sync holds the lease; standby is called once
	// if another holds it.
	Take(ctx context.Context, standby func(holder string)) (*statestore.Took, error)
	// Keep renews the lease until ctx ends (nil) or it is lost
	// (statestore.ErrLeaseLost).
	Keep(ctx context.Context) error
	// Check returns nil while this sync holds the lease.
	Check() error
	// Release gives the lease up once this sync has stopped writing.
	Release(ctx context.Context) error
}

// fenced is a store whose state writes carry the lease's fencing counter.
type fenced interface{ SetFence(int64) }

// runLeased is sync with a shared state: standby until it holds the
// lease (not ready, the change source untouched: a PostgreSQL slot has
// one consumer, and a standby never asks for it), then the fence wait for
// the old holder's writes, then sync as run does while the lease is
// renewed. A sync that loses its lease has stopped writing already (every
// write asks Check first) and goes back to standby.
func runLeased(ctx context.Context, job Job, opts Options) (*Summary, error) {
	log := opts.Logger
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-opts.Stop:
			stop()
		case <-stopCtx.Done():
		}
	}()
	for {
		opts.Health.SetReady(false, "standby: another sync holds the state's lease")
		opts.Metrics.SetState(metrics.StateStandby)
		opts.Metrics.SetConnected(false)
		// A standby is alive: liveness beats while it waits.
		endBeat := beatWhile(opts.Health)
		took, err := opts.Lease.Take(stopCtx, func(holder string) {
			log.Info("standby: another sync holds the state's lease; this one takes over when it expires", "holder", holder, "state", job.State.Where())
		})
		if err != nil {
			endBeat()
			return nil, stopped(ctx, opts, err)
		}
		if f, ok := job.State.(fenced); ok {
			f.SetFence(took.Counter)
		}
		log.Info("took the state's lease", "fencing_counter", took.Counter, "from", took.From, "fence_wait", took.Wait)
		endBeat()
		sum, lost, err := runHolding(ctx, job, opts, took.Wait)
		if lost && ctx.Err() == nil {
			log.Warn("lost the state's lease: this sync stopped writing and is standby again", "error", err)
			continue
		}
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if rerr := opts.Lease.Release(rctx); rerr != nil {
			log.Warn("releasing the state's lease failed; a standby takes over when it expires", "error", rerr)
		}
		cancel()
		return sum, err
	}
}

// runHolding keeps the lease from the take on, waits the fence, then runs
// sync; lost says the lease was lost meanwhile. A stop during the wait
// returns ErrInterrupted with nothing written.
func runHolding(ctx context.Context, job Job, opts Options, wait time.Duration) (*Summary, bool, error) {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		if err := opts.Lease.Keep(lctx); err != nil {
			cancel(err)
		}
	}()
	defer func() {
		cancel(nil)
		<-kept
	}()
	if wait > 0 {
		end := beatWhile(opts.Health)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-opts.Stop:
		case <-lctx.Done():
		}
		t.Stop()
		end()
		select {
		case <-opts.Stop:
			return nil, false, pipeline.ErrInterrupted
		default:
		}
		if lctx.Err() != nil {
			return nil, errors.Is(context.Cause(lctx), statestore.ErrLeaseLost), lctx.Err()
		}
	}
	sum, err := run(lctx, job, opts)
	return sum, errors.Is(context.Cause(lctx), statestore.ErrLeaseLost) || errors.Is(err, statestore.ErrFenced), err
}

// stopped is what a standby returns when it ends: interrupted by a stop
// signal, or the context's error.
func stopped(ctx context.Context, opts Options, err error) error {
	select {
	case <-opts.Stop:
		return pipeline.ErrInterrupted
	default:
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// beatWhile beats h every second until the returned func is called.
func beatWhile(h *metrics.Health) (end func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			h.Beat()
			select {
			case <-t.C:
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}
