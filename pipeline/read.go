package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/dynafold/dynafold/internal/connerr"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/retry"
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
func ReadRetrying(ctx context.Context, snap source.Snapshot, ep *mapping.EntityPlan, r source.Range, after []value.Value, pageSize int, rt Retry, emit func(value.Row, [][]value.Row) error) error {
	if rt.Attempts <= 0 {
		rt.Attempts = maxReadAttempts
	}
	// The first read again comes after up to 100 ms, the later ones after
	// up to 5 s.
	backoff := retry.Backoff{Base: 100 * time.Millisecond, Max: 5 * time.Second, Rand: retry.FullJitter}
	policy := retry.Policy{Attempts: rt.Attempts, Backoff: backoff, Sleep: rt.Sleep}
	if rt.OnRetry != nil {
		policy.OnRetry = func(attempt int, err error, _ time.Duration) { rt.OnRetry(attempt, err) }
	}
	nkey := len(ep.Query.Key)
	err := retry.Do(ctx, policy, retry.If(snap.Retryable), func(ctx context.Context) (bool, error) {
		err := ReadEntity(ctx, snap, ep, r, after, pageSize, func(row value.Row, nested [][]value.Row) error {
			if err := emit(row, nested); err != nil {
				return err
			}
			after = row[:nkey:nkey]
			return nil
		})
		switch {
		case err == nil || ctx.Err() != nil:
			return false, retry.Final(err)
		case rt.Reach != nil && connerr.Dial(err):
			if werr := rt.Reach.Wait(ctx, err); werr != nil {
				return false, retry.Final(werr)
			}
			return false, retry.Waited(err) // the wait took its time already
		}
		return false, err
	})
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		return ex.Err
	}
	return err
}
