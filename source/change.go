package source

import (
	"context"
	"time"

	"github.com/dynafold/dynafold/value"
)

// Live sync reads the source's change log (PostgreSQL logical replication,
// MySQL binlog) as committed transactions of row changes. These types are
// what a change source delivers; source/postgres and source/mysql produce
// them, and package cdc applies them.

// Op is the kind of a row change.
type Op uint8

// The row changes.
const (
	Insert Op = iota + 1
	Update
	Delete
	// Truncate empties the table; the change carries no rows.
	Truncate
)

func (o Op) String() string {
	switch o {
	case Insert:
		return "insert"
	case Update:
		return "update"
	case Delete:
		return "delete"
	case Truncate:
		return "truncate"
	}
	return "unknown"
}

// Change is one committed row change. Old is the before-image (of an
// update or delete) and New the after-image (of an insert or update); each
// holds the columns the log carried, by name. A before-image may hold only
// the key columns (PostgreSQL's default replica identity).
type Change struct {
	Table TableRef
	Op    Op
	Old   map[string]value.Value
	New   map[string]value.Value
}

// Position is a place in the source's change log, in the change source's
// own text form (a PostgreSQL LSN, a binlog file and offset, a GTID set).
type Position string

// Txn is one committed source transaction: its changes in order, the
// position just past its commit (confirming it confirms the transaction
// and everything before it) and its commit time.
type Txn struct {
	Changes []Change
	End     Position
	Commit  time.Time
	// Size is the bytes of log the transaction took, where known.
	Size int64
	// XID is the source's transaction id, where it has one (PostgreSQL):
	// a read of the current state must see this transaction's effects.
	XID uint32
	// Partial marks a piece of a transaction larger than PieceChanges:
	// more of its changes follow, and the last piece, which has End, is
	// not Partial. A piece has no End: confirming stops before it until
	// the last piece is applied.
	Partial bool
	// pieces counts the pieces cut off so far (Piece).
	pieces int
}

// PieceChanges bounds the changes of one open transaction a change source
// holds: a larger transaction is delivered in pieces of this many, so that
// a million-row transaction costs the memory of a piece, not of the
// transaction. The source sends a piece only once the events before it
// have been taken (SendPiece), so at most a piece waits while one is
// applied. Applying a piece before the rest is sound because sync
// re-derives rows from the source as it is after the commit: the changes
// only name the rows, and a kill before the last piece replays the whole
// transaction from the last confirmed position.
const PieceChanges = 20_000

// SendPiece delivers a piece (or any event) on events and then waits until
// the consumer has taken it, polling: this happens once per PieceChanges
// changes of a large transaction, never on the path of small ones. It
// returns false when ctx ends first.
func SendPiece(ctx context.Context, events chan Event, ev Event) bool {
	select {
	case events <- ev:
	case <-ctx.Done():
		return false
	}
	for len(events) > 0 {
		select {
		case <-time.After(time.Millisecond):
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// Piece cuts the changes gathered so far off t as a Partial piece, when
// there are PieceChanges of them; t keeps its identity for the pieces
// that follow.
func (t *Txn) Piece() *Txn {
	if t == nil || len(t.Changes) < PieceChanges {
		return nil
	}
	p := &Txn{Changes: t.Changes, Commit: t.Commit, XID: t.XID, Partial: true}
	t.Changes = make([]Change, 0, PieceChanges)
	t.pieces++
	return p
}

// Pieced reports whether pieces of t were delivered: its last piece must
// be delivered even when it holds no change, to carry End.
func (t *Txn) Pieced() bool { return t != nil && t.pieces > 0 }

// TableNeed is what live sync needs from one table's change log.
type TableNeed struct {
	Table *Table
	// Columns are the columns the mapping reads from the table: DDL that
	// drops one or changes its type stops sync.
	Columns []string
	// OldColumns are the columns whose before-image sync needs on update
	// and delete, besides the primary key (a nested child's parent key, a
	// join on a column that is not the primary key).
	OldColumns []string
}

// Problem is a missing prerequisite of live sync, with its fix.
type Problem struct {
	What string `json:"what"`
	Fix  string `json:"fix"`
}

// StreamStart is where a change log is read from, as a change source
// prepared it.
type StreamStart struct {
	// From is the position streaming starts after.
	From Position
	// Snapshot, when set, names an exported snapshot that shows exactly
	// the state at From, valid until streaming starts.
	Snapshot string
	// Created is true when this call created the slot (or recorded the
	// position) rather than finding it.
	Created bool
}

// Event is what a change stream delivers next: a committed transaction,
// the news that the stream is idle up to a position (every transaction
// before it has been delivered), or a schema change on a mapped column.
type Event struct {
	Txn    *Txn
	Idle   Position
	Schema *SchemaChange
}
