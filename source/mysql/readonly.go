package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

var _ source.ReadOnlyQuerier = (*Source)(nil)

// ReadOnly implements source.ReadOnlyQuerier: one consistent-snapshot,
// read-only transaction on one connection (the session is read-only
// too, see Open).
func (s *Source) ReadOnly(ctx context.Context) (source.ReadOnlySession, error) {
	snap := &snapshot{src: s}
	conn, err := snap.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening a read-only snapshot: %w", err)
	}
	return &readOnly{conn: conn, dsn: s.dsn}, nil
}

type readOnly struct {
	mu   sync.Mutex // one statement at a time on the connection
	conn *sql.Conn
	dsn  source.DSN
}

// Query implements source.ReadOnlySession. The text runs as written (an
// outer SELECT would lose its ORDER BY: MariaDB ignores the order of a
// derived table), decoded by the kinds DescribeQuery gave.
func (r *readOnly) Query(ctx context.Context, sql string, cols []source.Column, args []value.Value) ([]value.Row, error) {
	bound := make([]any, len(args))
	for i, a := range args {
		bound[i] = arg(a)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []value.Row
	err := myTx{r.conn, r.dsn}.Query(ctx, source.Statement{SQL: sql, Args: bound}, source.ResultColumns(cols), func(row value.Row) error {
		out = append(out, append(value.Row(nil), row...))
		return nil
	})
	return out, err
}

// Close implements source.ReadOnlySession.
func (r *readOnly) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn != nil {
		end(r.conn)
		r.conn = nil
	}
	return nil
}
