package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// current is one repeatable-read transaction over the latest committed
// state, for live sync's reads of the rows a change touches.
type current struct {
	src  *Source
	conn *pgxpool.Conn
	tx   pgx.Tx
}

// Current begins a read of the current state: every read through it sees
// one consistent state, committed after every change sync has received.
func (s *Source) Current(ctx context.Context) (source.Reader, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, s.dsn.RedactError(err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		conn.Release()
		return nil, s.dsn.RedactError(err)
	}
	return &current{src: s, conn: conn, tx: tx}, nil
}

func (c *current) ReadKeys(ctx context.Context, q *source.Query, nests []*source.Query, keys [][]value.Value, emit func(value.Row, [][]value.Row) error) error {
	return source.ReadKeys(ctx, pgTx{c.tx, c.src.dsn}, dialect{}, arg, q, nests, keys, emit)
}

func (c *current) MatchKeys(ctx context.Context, q *source.Query, m source.Match, emit func([]value.Value) error) error {
	return source.MatchKeys(ctx, pgTx{c.tx, c.src.dsn}, dialect{}, arg, q, m, emit)
}

func (c *current) Close() error {
	err := c.tx.Rollback(context.Background())
	c.conn.Release()
	return err
}
