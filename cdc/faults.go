package cdc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dynafold/dynafold/metrics"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/retry"
	"github.com/dynafold/dynafold/sink"
)

// Faults are weather, not failures: a lost source connection (a restart,
// a failover behind the same address, a terminated backend) and a
// DynamoDB outage are waited out, and sync goes on from its confirmed
// position. Nothing is confirmed meanwhile, so going on from there
// re-derives whatever the interrupted round may have half written, as a
// rerun after a crash does. Only broken invariants end sync: DDL on a
// mapped column, a row under on_error: fail, a missing prerequisite, and a
// reset source under --on-source-reset=stop.

// Reconnect delays: the first attempt comes at once (a dropped connection
// to a server that is up), then they grow to at most reconnectMax, so
// that a source that answers again is streamed from within seconds.
const (
	reconnectBase = 100 * time.Millisecond
	reconnectMax  = 2 * time.Second
	// faultRemindEvery is how often a fault that lasts is logged again.
	faultRemindEvery = 30 * time.Second
)

// faultSide says which side a transient fault is on.
type faultSide int

const (
	notTransient faultSide = iota
	sourceFault
	targetFault
)

func (s faultSide) String() string {
	if s == targetFault {
		return "DynamoDB"
	}
	return "the source"
}

// side classifies err: a transient fault of the source or of DynamoDB, or
// neither. Stops and the errors that end sync on purpose are never
// transient.
func (e *engine) side(err error) faultSide {
	var schema *SchemaError
	var row *RowFailure
	var reset *SourceResetError
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, pipeline.ErrInterrupted),
		errors.As(err, &schema), errors.As(err, &row), errors.As(err, &reset):
		return notTransient
	}
	var unreachable *sink.UnreachableError
	if errors.Is(err, sink.ErrGaveUp) || errors.As(err, &unreachable) {
		return targetFault
	}
	if e.job.SourceTransient != nil && e.job.SourceTransient(err) {
		return sourceFault
	}
	return notTransient
}

// fault is a transient fault being waited out: since when, how often it
// was retried, and which side it is on.
type fault struct {
	side     faultSide
	since    time.Time
	attempts int
	reminded time.Time
	last     error
}

// waitOut records a transient fault and waits before the next attempt.
// It returns an error when sync must stop instead: a stop signal
// (ErrInterrupted), the context, or the fault outlasting --give-up-after
// (a pipeline.ResumableError: the state is saved and a rerun resumes).
func (e *engine) waitOut(ctx context.Context, side faultSide, err error) error {
	now := time.Now()
	f := e.fault
	if f == nil || f.side != side {
		f = &fault{side: side, since: now, reminded: now}
		e.fault = f
		e.log.Warn(fmt.Sprintf("%s is unavailable; sync waits and goes on from its confirmed position", side), "error", err, "confirmed", e.state.Confirmed)
		e.status.setFault(side.String() + " is unavailable: " + err.Error())
	} else if now.Sub(f.reminded) >= faultRemindEvery {
		f.reminded = now
		e.log.Warn(fmt.Sprintf("%s still unavailable", side), "for", now.Sub(f.since).Round(time.Second), "attempts", f.attempts, "error", err)
	}
	f.attempts++
	f.last = err
	e.setState(metrics.StateReconnecting)
	e.health.SetReady(false, fmt.Sprintf("reconnecting: %s is unavailable", side))
	if side == sourceFault {
		e.metrics.SetConnected(false)
		e.metrics.Retry(metrics.RetrySource)
	} else {
		e.metrics.Retry(metrics.RetryRound)
	}
	if g := e.opts.GiveUpAfter; g > 0 && now.Sub(f.since) >= g {
		return &pipeline.ResumableError{Err: fmt.Errorf("%s has been unavailable for %s, longer than --give-up-after %s: %w", side, now.Sub(f.since).Round(time.Second), g, err)}
	}
	// Between half and all of the delay: never much sooner than it says.
	backoff := retry.Backoff{Base: reconnectBase, Max: reconnectMax, Rand: retry.EqualJitter}
	t := time.NewTimer(backoff.Delay(f.attempts - 1))
	defer t.Stop()
	for {
		select {
		case <-e.opts.Stop:
			return pipeline.ErrInterrupted
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case <-e.beat.C:
			e.health.Beat()
			e.report(nil)
		}
	}
}

// recovered ends the fault being waited out, if any: the change stream
// is open again, a round was applied, or the load completed. Sync is then
// in state again.
func (e *engine) recovered(state string) {
	f := e.fault
	if f == nil {
		return
	}
	e.fault = nil
	e.log.Info(fmt.Sprintf("%s is back; sync goes on", f.side), "state", state, "after", time.Since(f.since).Round(time.Millisecond), "attempts", f.attempts)
	e.status.setFault("")
	e.setState(state)
	if state == metrics.StateStreaming {
		e.health.SetReady(true, "")
	}
}

// SourceResetError is a source whose state no longer matches what sync
// recorded: the replication slot is gone or invalidated, the binlog of the
// confirmed position was purged, or the server is another one. Streaming
// from the confirmed position would silently miss changes.
type SourceResetError struct {
	// What changed, in a sentence.
	What string
	// Command is the command that recovers.
	Command string
}

func (e *SourceResetError) Error() string {
	return fmt.Sprintf("the source was reset: %s; the table may miss changes made since the confirmed position. To reload it and delete the items no row produces any more, run: %s",
		e.What, e.Command)
}
