package cdc

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dynafold/dynafold/source"
)

// round applies a group of whole transactions.
type round struct {
	e      *engine
	txns   []*source.Txn
	counts Counters
	// rejects serializes rows that cannot become items, which slices read
	// at once may meet (rowFailed).
	rejects sync.Mutex
	// readTime and writeTime are how long the round read the source and
	// wrote the table, for the debug log (readTime sums the slices' reads,
	// which overlap when several connections read them); readers is how
	// many connections read its slices.
	readTime, writeTime time.Duration
	readers             int
	// owners maps each item key the round has put to the row that put it,
	// across the round's slices: a key one row puts is never deleted as
	// another row's old key, and two rows putting one key is an error.
	// Both are kept as 128-bit hashes: a round that fans out to hundreds
	// of thousands of rows keeps a tenth of the memory its keys' text
	// would take (and a collision, at 2^-128 a pair, is never expected).
	owners map[hash128]hash128
	// truncated are the tables the round's transactions emptied.
	truncated []source.TableRef
}

// apply re-derives every row the round's changes touch and writes the
// difference. It returns once DynamoDB has acknowledged every write and the
// row index records the result.
func (r *round) apply(ctx context.Context) error {
	started := time.Now()
	aff, fan, err := r.touched()
	if err != nil {
		return err
	}
	rd, err := r.e.job.Reader.Current(ctx, r.txns)
	if err != nil {
		return fmt.Errorf("reading the source: %w", err)
	}
	defer rd.Close()
	if err := r.matchJoins(ctx, rd, aff, fan); err != nil {
		return err
	}
	r.readTime += time.Since(started)
	return r.rederive(ctx, rd, aff)
}
