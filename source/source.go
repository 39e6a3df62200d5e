// Package source reads relational databases for dynafold: schema
// introspection, primary-key-range shards, and keyset-paged row streams
// inside one consistent snapshot.
//
// The Source and Snapshot interfaces are implemented by source/postgres
// (pgx/v5) and source/mysql (go-sql-driver/mysql). This package holds what
// both share: the dialect-neutral Query, the schema types, SQL generation
// and DSN handling. It knows nothing about DynamoDB.
package source

import (
	"context"
	"errors"

	"github.com/dynafold/dynafold/value"
)

// Source is a connected database. Its methods may be called concurrently.
type Source interface {
	// Driver returns "postgres" or "mysql".
	Driver() string
	// Introspect describes the named tables. A table that does not exist is
	// absent from the result, not an error, so callers can report every
	// missing table at once.
	Introspect(ctx context.Context, refs []TableRef) (map[TableRef]*Table, error)
	// DescribeQuery returns the columns a read-only SELECT produces, without
	// reading its rows.
	DescribeQuery(ctx context.Context, sql string) (*Table, error)
	// Snapshot begins a consistent view of the database that every later
	// read of this run shares (where the engine allows it).
	Snapshot(ctx context.Context, opts SnapshotOptions) (Snapshot, error)
	// Close releases every connection.
	Close() error
}

// TableLister is implemented by sources that can list their tables; it is
// asked only when a mapping names a table that does not exist, to suggest
// the one meant.
type TableLister interface {
	// Tables lists the tables and views of schema (empty: the connection's
	// default schema or database), with Schema set to the schema asked for.
	Tables(ctx context.Context, schema string) ([]TableRef, error)
}

// SnapshotOptions tunes a snapshot.
type SnapshotOptions struct {
	// Readers is how many Read calls may run at once; drivers size their
	// connection pools from it.
	Readers int
	// Import, when set, is a snapshot exported elsewhere (a replication
	// slot's) that every reader imports instead of one this run exports;
	// its exporter must keep it alive while the run reads.
	Import string
}

// Snapshot is one consistent view of the source. Its methods may be called
// concurrently from several goroutines.
type Snapshot interface {
	// Shards splits the rows of q into at most n ranges of its first key
	// column, in key order. Ranges cover the whole key space, so rows
	// inserted concurrently are never outside every range.
	Shards(ctx context.Context, q *Query, n int) ([]Range, error)
	// Count returns the number of rows of q in r: exactly when exact is
	// true, otherwise a cheap estimate (-1 when none is available).
	Count(ctx context.Context, q *Query, r Range, exact bool) (int64, error)
	// Read streams the rows of q inside r whose key is greater than after
	// (all rows when after is nil), in key order, fetching pageSize rows per
	// round trip. emit is called from the calling goroutine, one row at a
	// time; it owns the row. An error from emit stops the read and is
	// returned unchanged.
	Read(ctx context.Context, q *Query, r Range, after []value.Value, pageSize int, emit func(value.Row) error) error
	// ReadNested is Read for a parent query with nested child queries
	// (mapping's nest:): emit receives each parent row with, for each
	// nested query in order, its child rows in order. Parents and children
	// are read in one transaction.
	ReadNested(ctx context.Context, q *Query, nests []*Query, r Range, after []value.Value, pageSize int, emit func(value.Row, [][]value.Row) error) error
	// Info describes how consistent the snapshot is, for logs and reports.
	Info() SnapshotInfo
	// Retryable reports whether a Read error is a lost or killed
	// connection, after which reading again from the last row emitted is
	// safe and sees the same snapshot.
	Retryable(err error) bool
	// Close ends the snapshot.
	Close() error
}

// SnapshotInfo tells the operator what consistency a run had.
type SnapshotInfo struct {
	// Shared is true when every reader sees the same snapshot.
	Shared bool
	// ID is the engine's name for it (a PostgreSQL exported snapshot).
	ID string
	// Note explains the guarantee in a sentence.
	Note string
}

// Range is a half-open range [Lo, Hi) of the first key column. A nil bound
// is unbounded on that side.
type Range struct {
	Lo *value.Value `json:"lo,omitempty"`
	Hi *value.Value `json:"hi,omitempty"`
}

// Full is the range that covers every row.
var Full = Range{}

// ErrNotReadOnly is returned when a source session cannot be made read-only.
var ErrNotReadOnly = errors.New("source session is not read-only")
