package cdc

import (
	"context"

	"github.com/dynafold/dynafold/source"
)

// ChangeSource is a database's change log. Its methods are called from one
// goroutine, in the order Check, then Identity, Lost, Prepare, Stream
// (again after each reconnection), and Head at any time. Errors a later
// attempt can outlive are classified by Job.SourceTransient.
type ChangeSource interface {
	// Check returns every prerequisite the database lacks for streaming
	// the tables needs names, each with its fix. The error is a failure to
	// check, not a missing prerequisite.
	Check(ctx context.Context, needs []source.TableNeed) ([]source.Problem, error)
	// Prepare creates what streaming needs (a slot and a publication on
	// PostgreSQL; on MySQL it records the binlog position) unless it
	// exists, and returns where streaming starts. resume is the position
	// sync recorded ("" for a new sync): a change source that keeps no
	// state on the server (MySQL) starts there while its log holds it.
	Prepare(ctx context.Context, needs []source.TableNeed, resume source.Position) (source.StreamStart, error)
	// Stream starts delivering committed transactions after from.
	Stream(ctx context.Context, from source.Position, needs []source.TableNeed) (Stream, error)
	// Head returns the log's current end: every transaction committed
	// before the call ends at or before it.
	Head(ctx context.Context) (source.Position, error)
	// Compare orders two positions (-1, 0, 1).
	Compare(a, b source.Position) int
	// Distance is the bytes of log from one position to a later one.
	Distance(from, to source.Position) int64
	// Identity names the server (PostgreSQL's system identifier, MySQL's
	// server_id and server_uuid or GTID domain), so that another server
	// behind the same address is told from the one sync recorded.
	Identity(ctx context.Context) (string, error)
	// Lost reports, in a sentence, why the log can no longer be read from
	// the recorded position from (the slot is gone or invalidated, the
	// binlog purged), or "" when it can. It is called before Prepare,
	// at start and on every reconnection.
	Lost(ctx context.Context, from source.Position) (string, error)
	// Reset discards what a lost position left (an invalidated slot, the
	// recorded binlog position), so that the next Prepare starts anew.
	Reset(ctx context.Context) error
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

// Heartbeater is a change source that can write a heartbeat: one row
// upserted into a table of the operator's choosing (--heartbeat-table),
// a transaction in the synced database that the stream then confirms
// past. Managed servers whose keepalives alone do not move an idle slot
// need it.
type Heartbeater interface {
	Heartbeat(ctx context.Context) error
}

// Retainer is a change source whose server keeps log for sync: PostgreSQL
// keeps the slot's WAL. Retained returns the bytes kept and the most the
// server may keep before it invalidates the slot (-1: no limit).
type Retainer interface {
	Retained(ctx context.Context) (bytes, limit int64, err error)
}
