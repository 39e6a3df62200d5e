package cdc

import (
	"context"

	"github.com/dynafold/dynafold/source"
)

// The change log itself is source.ChangeSource, beside the transactions
// and positions it delivers; what follows is what only sync asks of a
// source.

// CurrentReader opens a read of the source's current state that sees the
// effects of txns: a transaction reaches the change log a moment before
// its effects are visible to other sessions, and a read in that moment
// would miss them.
type CurrentReader interface {
	Current(ctx context.Context, txns []*source.Txn) (source.Reader, error)
}
