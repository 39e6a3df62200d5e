package pipeline

import (
	"context"
	"time"

	"github.com/dynafold/dynafold/internal/connerr"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// ReadEntity streams an entity's rows inside r after the key position
// after, each with its nested child rows when the entity nests child
// tables (in the order of EntityPlan.Nests). Every reader of entities —
// migrate, verify, plan — goes through it so that items are built from the
// same records. emit is called from the calling goroutine and owns what it
// is given.
func ReadEntity(ctx context.Context, snap source.Snapshot, ep *mapping.EntityPlan, r source.Range, after []value.Value, pageSize int, emit func(value.Row, [][]value.Row) error) error {
	nests := ep.Nests()
	if len(nests) == 0 {
		return snap.Read(ctx, ep.Query, r, after, pageSize, func(row value.Row) error { return emit(row, nil) })
	}
	qs := make([]*source.Query, len(nests))
	for i, n := range nests {
		qs[i] = n.Query
	}
	return snap.ReadNested(ctx, ep.Query, qs, r, after, pageSize, emit)
}

// maxReadAttempts bounds how often one shard is read again after its
// source connection was lost.
const maxReadAttempts = 5

// Retry tunes ReadRetrying; the zero value takes the defaults.
type Retry struct {
	// Attempts bounds the reads of one shard in all (default 5).
	Attempts int
	Backoff  *sink.Backoff
	// Sleep waits between attempts; tests replace it.
	Sleep func(context.Context, time.Duration) error
	// OnRetry is told of each new attempt and the error that caused it.
	OnRetry func(attempt int, err error)
	// Reach, when set, waits out a source that refuses connections (an
	// attempt that failed to connect at all), for all readers at once.
	Reach Reacher
}

// Reacher waits for a source that stopped accepting connections; see
// drivers.Reach. Wait returns nil when the source can be read again, or
// the error to stop with.
type Reacher interface {
	Wait(ctx context.Context, err error) error
}

// ReadRetrying is ReadEntity that, when the source connection is lost or
// killed (Snapshot.Retryable), reads again after the last row it emitted,
// with backoff, so that no row is read twice or skipped. It returns the
// last attempt's error.
func ReadRetrying(ctx context.Context, snap source.Snapshot, ep *mapping.EntityPlan, r source.Range, after []value.Value, pageSize int, retry Retry, emit func(value.Row, [][]value.Row) error) error {
	if retry.Attempts <= 0 {
		retry.Attempts = maxReadAttempts
	}
	backoff := sink.DefaultBackoff()
	if retry.Backoff != nil {
		backoff = *retry.Backoff
	}
	if retry.Sleep == nil {
		retry.Sleep = sink.Sleep
	}
	nkey := len(ep.Query.Key)
	for attempt := 1; ; attempt++ {
		err := ReadEntity(ctx, snap, ep, r, after, pageSize, func(row value.Row, nested [][]value.Row) error {
			if err := emit(row, nested); err != nil {
				return err
			}
			after = row[:nkey:nkey]
			return nil
		})
		if err == nil || ctx.Err() != nil {
			return err
		}
		waited := false
		if retry.Reach != nil && connerr.Dial(err) {
			if werr := retry.Reach.Wait(ctx, err); werr != nil {
				return werr
			}
			waited = true
		} else if !snap.Retryable(err) {
			return err
		}
		if attempt >= retry.Attempts {
			return err
		}
		if waited {
			continue // the wait said so already, and took its time
		}
		if retry.OnRetry != nil {
			retry.OnRetry(attempt, err)
		}
		if err := retry.Sleep(ctx, backoff.Delay(attempt+1)); err != nil {
			return err
		}
	}
}
