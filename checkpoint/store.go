// Package checkpoint records how far a migration has got, so that a run
// killed at any instant resumes with nothing lost.
//
// A run is split into shards (a primary-key range of one entity). For each
// shard the store keeps the key of the last source row whose items DynamoDB
// has acknowledged: positions only ever move past rows that are fully
// written. The Store interface is shaped around claiming and advancing
// shards rather than loading and saving one document, so that a store kept
// in DynamoDB, where several workers claim shards under leases, fits behind
// it without changing the pipeline.
package checkpoint

import (
	"context"
	"errors"
	"time"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Status is the state of a shard.
type Status string

// Shard states.
const (
	Pending Status = "pending"
	Running Status = "running"
	Done    Status = "done"
)

// Shard is one key range of one entity and its acknowledged progress.
type Shard struct {
	Entity string       `json:"entity"`
	ID     int          `json:"id"`
	Range  source.Range `json:"range"`
	Status Status       `json:"status"`
	// After is the key of the last row whose items are all written; reading
	// resumes after it. Nil: from the start of the range.
	After []value.Value `json:"after,omitempty"`
	// Rows, Items and Rejected count acknowledged progress over every run
	// of this checkpoint, so that totals add up across resumes.
	Rows     int64 `json:"rows"`
	Items    int64 `json:"items"`
	Rejected int64 `json:"rejected"`
}

// Meta identifies a run.
type Meta struct {
	// Fingerprint of mapping, variables, source and table.
	Fingerprint string `json:"fingerprint"`
	Table       string `json:"table"`
	Source      string `json:"source"`
	RunID       string `json:"run_id"`
}

// ErrMismatch is returned by Open when the saved run was made with a
// different mapping, source or table.
var ErrMismatch = errors.New("checkpoint was made with a different mapping, source or table")

// Store keeps a run's shards. Open, Plan, Claim, Flush, Finish and Discard
// are called from the pipeline's coordinating goroutines; Advance, Done and
// Snapshot may be called concurrently from any goroutine.
type Store interface {
	// Open begins a run or resumes the saved one. resumed is true when
	// saved progress will be used. A saved, unfinished run with another
	// fingerprint yields ErrMismatch unless force is set, in which case
	// its positions are kept under the new fingerprint.
	Open(ctx context.Context, meta Meta, force bool) (resumed bool, err error)
	// Plan returns an entity's shards, computing them with split only the
	// first time; a resumed run keeps its saved ranges.
	Plan(ctx context.Context, entity string, split func() ([]source.Range, error)) ([]*Shard, error)
	// Claim hands out the next shard to read, or ok=false when none is
	// left. A lease-based store claims it for this worker.
	Claim(ctx context.Context) (shard *Shard, ok bool, err error)
	// Advance records that every item of every row of the shard up to and
	// including the row with key pos is acknowledged, and adds to its
	// counters. It does not persist; Flush does.
	Advance(shard *Shard, pos []value.Value, rows, items, rejected int64)
	// Done marks a shard finished.
	Done(shard *Shard)
	// Flush persists what Advance and Done recorded.
	Flush(ctx context.Context) error
	// Finish marks the run complete and persists it.
	Finish(ctx context.Context) error
	// Discard forgets any saved run (--restart).
	Discard(ctx context.Context) error
	// Shards returns a copy of every shard's state, for reports.
	Shards() []Shard
	// Started returns when the run (first started, across resumes) began.
	Started() time.Time
}
