package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

var _ source.ReadOnlyQuerier = (*Source)(nil)

// ReadOnly implements source.ReadOnlyQuerier: one read-only
// repeatable-read transaction on one pooled connection.
func (s *Source) ReadOnly(ctx context.Context) (source.ReadOnlySession, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening a read-only snapshot: %w", s.dsn.RedactError(err))
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		conn.Release()
		return nil, fmt.Errorf("opening a read-only snapshot: %w", s.dsn.RedactError(err))
	}
	return &readOnly{conn: conn, tx: tx, dsn: s.dsn}, nil
}

type readOnly struct {
	mu   sync.Mutex // one statement at a time on the connection
	conn *pgxpool.Conn
	tx   pgx.Tx
	dsn  source.DSN
}

// Query implements source.ReadOnlySession. A column the driver reads
// through a cast (uuid, json, character(n), types without a decoder) is
// cast in an outer SELECT, as entity reads cast it, so that its value is
// the one items are built from; the subquery's order is kept.
func (r *readOnly) Query(ctx context.Context, sql string, cols []source.Column, args []value.Value) ([]value.Row, error) {
	refs := source.ResultColumns(cols)
	text := sql
	if needsCast(cols) {
		var sb strings.Builder
		sb.WriteString("SELECT ")
		for i, c := range cols {
			if i > 0 {
				sb.WriteString(", ")
			}
			expr := "src." + dialect{}.Quote(c.Name)
			if c.Cast != "" {
				expr = dialect{}.CastColumn(expr, c.Cast)
			}
			sb.WriteString(expr)
		}
		sb.WriteString(" FROM (" + strings.TrimRight(strings.TrimSpace(sql), ";") + ") AS src")
		text = sb.String()
	}
	bound := make([]any, len(args))
	for i, a := range args {
		bound[i] = arg(a)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []value.Row
	err := pgTx{r.tx, r.dsn}.Query(ctx, source.Statement{SQL: text, Args: bound}, refs, func(row value.Row) error {
		out = append(out, append(value.Row(nil), row...))
		return nil
	})
	return out, err
}

func needsCast(cols []source.Column) bool {
	for _, c := range cols {
		if c.Cast != "" {
			return true
		}
	}
	return false
}

// Close implements source.ReadOnlySession.
func (r *readOnly) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tx != nil {
		_ = r.tx.Rollback(context.Background())
		r.conn.Release()
		r.tx, r.conn = nil, nil
	}
	return nil
}
