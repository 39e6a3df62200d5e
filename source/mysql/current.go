package mysql

import (
	"context"
	"database/sql"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// current is one consistent-snapshot, read-only transaction over the
// latest committed state, for live sync's reads of the rows a change
// touches.
type current struct {
	src  *Source
	conn *sql.Conn
}

var _ source.Reader = (*current)(nil)

// Current begins a read of the current state: every read through it sees
// one consistent state (START TRANSACTION WITH CONSISTENT SNAPSHOT),
// committed after every change sync has received.
func (s *Source) Current(ctx context.Context) (source.Reader, error) {
	conn, err := (&snapshot{src: s}).begin(ctx)
	if err != nil {
		return nil, err
	}
	return &current{src: s, conn: conn}, nil
}

// ReadKeys implements source.Reader. Multi-column keys are matched with
// (a, b) IN ((?, ?), …), which MySQL and MariaDB accept.
func (c *current) ReadKeys(ctx context.Context, q *source.Query, nests []*source.Query, keys [][]value.Value, emit func(value.Row, [][]value.Row) error) error {
	return source.ReadKeys(ctx, myTx{c.conn, c.src.dsn}, dialect{}, arg, q, nests, keys, emit)
}

// MatchKeys implements source.Reader.
func (c *current) MatchKeys(ctx context.Context, q *source.Query, m source.Match, emit func([]value.Value) error) error {
	return source.MatchKeys(ctx, myTx{c.conn, c.src.dsn}, dialect{}, arg, q, m, emit)
}

// Close ends the transaction and returns the connection to the pool.
func (c *current) Close() error {
	end(c.conn)
	return nil
}
