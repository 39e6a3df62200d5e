package cdc

import (
	"context"

	"github.com/dynafold/dynafold/source"
)

// ChangeSource is a database's change log. Its methods are called from one
// goroutine, in the order Check, Prepare, Stream (and Head at any time).
type ChangeSource interface {
	// Check returns every prerequisite the database lacks for streaming
	// the tables needs names, each with its fix. The error is a failure to
	// check, not a missing prerequisite.
	Check(ctx context.Context, needs []source.TableNeed) ([]source.Problem, error)
	// Prepare creates what streaming needs (a slot and a publication on
	// PostgreSQL; on MySQL it records the binlog position) unless it
	// exists, and returns where streaming starts.
	Prepare(ctx context.Context, needs []source.TableNeed) (source.StreamStart, error)
	// Stream starts delivering committed transactions after from.
	Stream(ctx context.Context, from source.Position, needs []source.TableNeed) (Stream, error)
	// Head returns the log's current end: every transaction committed
	// before the call ends at or before it.
	Head(ctx context.Context) (source.Position, error)
	// Compare orders two positions (-1, 0, 1).
	Compare(a, b source.Position) int
	// Distance is the bytes of log from one position to a later one.
	Distance(from, to source.Position) int64
	// Cleanup removes what Prepare created and returns what it removed.
	Cleanup(ctx context.Context) ([]string, error)
	// Close releases connections.
	Close() error
}

// Stream is a running change stream.
type Stream interface {
	// Events delivers transactions in commit order, idle positions and
	// schema changes. It is closed when the stream fails; Err says why.
	Events() <-chan source.Event
	Err() error
	// Confirm tells the source every change through pos is applied and
	// acknowledged; it may be called from any goroutine.
	Confirm(pos source.Position)
	// ServerEnd is the latest log end the source reported, for lag.
	ServerEnd() source.Position
	// Close stops the stream, reporting the confirmed position first.
	Close() error
}

// CurrentReader opens a read of the source's current state that sees the
// effects of txns: a transaction reaches the change log a moment before
// its effects are visible to other sessions, and a read in that moment
// would miss them.
type CurrentReader interface {
	Current(ctx context.Context, txns []*source.Txn) (source.Reader, error)
}
