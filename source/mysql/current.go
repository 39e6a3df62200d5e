package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

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
//
// The transactions sync hands it (txns) are already visible: the change
// stream delivers a transaction only once its commit is (see visible.go).
func (s *Source) Current(ctx context.Context, _ []*source.Txn) (source.Reader, error) {
	conn, err := (&snapshot{src: s}).begin(ctx)
	if err != nil {
		return nil, err
	}
	return &current{src: s, conn: conn}, nil
}

// ReadKeys implements source.Reader. Multi-column keys are matched with
// (a, b) IN ((?, ?), …), which MySQL and MariaDB accept.
func (c *current) ReadKeys(ctx context.Context, q *source.Query, nests []*source.Query, keys [][]value.Value, emit func(value.Row, [][]value.Row) error) error {
	return schemaChanged(q, source.ReadKeys(ctx, myTx{c.conn, c.src.dsn}, dialect{}, arg, q, nests, keys, emit))
}

// MatchKeys implements source.Reader.
func (c *current) MatchKeys(ctx context.Context, q *source.Query, m source.Match, emit func([]value.Value) error) error {
	return schemaChanged(q, source.MatchKeys(ctx, myTx{c.conn, c.src.dsn}, dialect{}, arg, q, m, emit))
}

// MySQL's error numbers for a column or table that is not there.
const (
	erBadFieldError = 1054 // ER_BAD_FIELD_ERROR
	erNoSuchTable   = 1146 // ER_NO_SUCH_TABLE
)

// schemaChanged marks a read that failed because a mapped column or table
// is gone: DDL ran on the source, and sync reads the current state before
// the binlog has delivered that DDL (see source.ErrDefinitionGone).
func schemaChanged(q *source.Query, err error) error {
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) && (myErr.Number == erBadFieldError || myErr.Number == erNoSuchTable) {
		return fmt.Errorf("%w: reading %s: %w", source.ErrDefinitionGone, q.Base, err)
	}
	return err
}

// Close ends the transaction and returns the connection to the pool.
func (c *current) Close() error {
	end(c.conn)
	return nil
}
