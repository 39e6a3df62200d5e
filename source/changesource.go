package source

import "context"

// ChangeSource is a database's change log, as live sync (package cdc)
// reads it; source/postgres and source/mysql implement it, and
// source/drivers hands out the one for a Source. Its methods are called
// from one goroutine, in the order Check, then Identity, Lost, Prepare,
// Stream (again after each reconnection), and Head at any time. Errors a
// later attempt can outlive are classified by cdc.Job.SourceTransient.
type ChangeSource interface {
	// Check returns every prerequisite the database lacks for streaming
	// the tables needs names, each with its fix. The error is a failure to
	// check, not a missing prerequisite.
	Check(ctx context.Context, needs []TableNeed) ([]Problem, error)
	// Prepare creates what streaming needs (a slot and a publication on
	// PostgreSQL; on MySQL it records the binlog position) unless it
	// exists, and returns where streaming starts. resume is the position
	// sync recorded ("" for a new sync): a change source that keeps no
	// state on the server (MySQL) starts there while its log holds it.
	Prepare(ctx context.Context, needs []TableNeed, resume Position) (StreamStart, error)
	// Stream starts delivering committed transactions after from.
	Stream(ctx context.Context, from Position, needs []TableNeed) (Stream, error)
	// Head returns the log's current end: every transaction committed
	// before the call ends at or before it.
	Head(ctx context.Context) (Position, error)
	// Compare orders two positions (-1, 0, 1).
	Compare(a, b Position) int
	// Distance is the bytes of log from one position to a later one.
	Distance(from, to Position) int64
	// Identity names the server (PostgreSQL's system identifier, MySQL's
	// server_id and server_uuid or GTID domain), so that another server
	// behind the same address is told from the one sync recorded.
	Identity(ctx context.Context) (string, error)
	// Lost reports, in a sentence, why the log can no longer be read from
	// the recorded position from (the slot is gone or invalidated, the
	// binlog purged), or "" when it can. It is called before Prepare,
	// at start and on every reconnection.
	Lost(ctx context.Context, from Position) (string, error)
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
	Events() <-chan Event
	Err() error
	// Confirm tells the source every change through pos is applied and
	// acknowledged; it may be called from any goroutine.
	Confirm(pos Position)
	// ServerEnd is the latest log end the source reported, for lag.
	ServerEnd() Position
	// Close stops the stream, reporting the confirmed position first.
	Close() error
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
