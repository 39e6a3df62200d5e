package source

import (
	"context"

	"github.com/dynafold/dynafold/value"
)

// ReadOnlyQuerier is implemented by sources that can run an application's
// own read-only queries with bound parameters, for patterns
// --compare-source (the shadow comparison).
type ReadOnlyQuerier interface {
	// ReadOnly opens one read-only, repeatable-read transaction on one
	// connection: every query of the session sees one snapshot.
	ReadOnly(ctx context.Context) (ReadOnlySession, error)
}

// ReadOnlySession is one read-only snapshot. Its methods may be called
// concurrently; queries run one at a time on its connection.
type ReadOnlySession interface {
	// Query runs sql, whose placeholders are the driver's ($1.. or ?),
	// with args bound to them, and returns every row decoded as the
	// kinds of cols (from DescribeQuery of the same text), in the order
	// the server returned them. Errors are the server's, with the DSN
	// redacted.
	Query(ctx context.Context, sql string, cols []Column, args []value.Value) ([]value.Row, error)
	// Close ends the transaction and releases the connection.
	Close() error
}

// ResultColumns turns described columns into the column references a
// reader decodes by.
func ResultColumns(cols []Column) []ColumnRef {
	out := make([]ColumnRef, len(cols))
	for i, c := range cols {
		out[i] = ColumnRef{Name: c.Name, Cast: c.Cast, Kind: c.Kind, Elem: c.Elem}
	}
	return out
}
