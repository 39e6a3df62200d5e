package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
	// snapshot is the transaction's exported snapshot, once Fork has
	// exported it.
	snapshot string
}

// visibleWait bounds how long Current waits for a decoded transaction to
// become visible: it is a matter of the committing backend finishing its
// commit, normally microseconds.
const visibleWait = 10 * time.Second

// Current begins a read of the current state: every read through it sees
// one consistent state that includes every transaction of txns.
//
// A transaction's commit record is in the WAL, and so can be decoded and
// sent, a moment before the committing backend leaves the proc array and
// its effects become visible to new snapshots. Current takes its snapshot
// first (pg_current_snapshot(), the first statement of a repeatable-read
// transaction) and starts again until no transaction of txns is still in
// progress in it.
func (s *Source) Current(ctx context.Context, txns []*source.Txn) (source.Reader, error) {
	deadline := time.Now().Add(visibleWait)
	for wait := 50 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			return nil, s.dsn.RedactError(err)
		}
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			conn.Release()
			return nil, s.dsn.RedactError(err)
		}
		var snap string
		if err := tx.QueryRow(ctx, currentSQL).Scan(&snap, nil); err != nil {
			_ = tx.Rollback(ctx)
			conn.Release()
			return nil, s.dsn.RedactError(err)
		}
		xid, visible := allVisible(snap, txns)
		if visible {
			return &current{src: s, conn: conn, tx: tx}, nil
		}
		_ = tx.Rollback(ctx)
		conn.Release()
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("transaction %d was decoded from the WAL but is still not visible after %s", xid, visibleWait)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// currentSQL takes the snapshot (the transaction's first statement) and
// prices its reads (priceReads).
const currentSQL = "SELECT pg_current_snapshot()::text, " + priceReads

// priceReads prices random reads as the cached, indexed point reads that
// sync's reads by key are, for the transaction only. With the default of
// 4, a list of a few hundred keys joined to a parent table of a hundred
// thousand rows is planned as a hash join over the whole parent (20-30 ms
// a list), where probing its key index takes a quarter of that.
const priceReads = "set_config('random_page_cost', '1.1', true)"

// allVisible reports whether every transaction of txns is visible in a
// snapshot "xmin:xmax:xip,…" (64-bit ids), comparing the 32-bit ids the
// WAL carries with the snapshot's low 32 bits, modulo wraparound. It
// returns the first one that is not.
func allVisible(snap string, txns []*source.Txn) (uint32, bool) {
	parts := strings.SplitN(snap, ":", 3)
	if len(parts) != 3 {
		return 0, true // not a snapshot this code understands: do not block
	}
	xmax, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		return 0, true
	}
	inProgress := map[uint32]bool{}
	for _, x := range strings.Split(parts[2], ",") {
		if v, err := strconv.ParseUint(x, 10, 64); err == nil {
			inProgress[uint32(v)] = true
		}
	}
	for _, t := range txns {
		if t.XID == 0 {
			continue
		}
		// xid >= xmax (modulo 2^32): not yet started when the snapshot
		// was taken, from the snapshot's point of view.
		if int32(t.XID-uint32(xmax)) >= 0 || inProgress[t.XID] {
			return t.XID, false
		}
	}
	return 0, true
}

func (c *current) ReadKeys(ctx context.Context, q *source.Query, nests []*source.Query, keys [][]value.Value, emit func(value.Row, [][]value.Row) error) error {
	return definitionGone(source.ReadKeys(ctx, pgTx{c.tx, c.src.dsn}, dialect{}, arg, q, nests, keys, emit))
}

func (c *current) MatchKeys(ctx context.Context, q *source.Query, m source.Match, emit func([]value.Value) error) error {
	return definitionGone(source.MatchKeys(ctx, pgTx{c.tx, c.src.dsn}, dialect{}, arg, q, m, emit))
}

// definitionGone marks a read that failed on a column or table that is no
// longer there (undefined_column, undefined_table): see
// source.ErrDefinitionGone.
func definitionGone(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "42703" || pgErr.Code == "42P01") {
		return fmt.Errorf("%w: %w", source.ErrDefinitionGone, err)
	}
	return err
}

// Fork begins a read of the same snapshot on another connection: the
// transaction exports its snapshot once (pg_export_snapshot, valid while
// the transaction is open), and the fork imports it as its first statement
// (SET TRANSACTION SNAPSHOT), so both see exactly the same rows.
func (c *current) Fork(ctx context.Context) (source.Reader, error) {
	if c.snapshot == "" {
		if err := c.tx.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&c.snapshot); err != nil {
			return nil, c.src.dsn.RedactError(err)
		}
	}
	conn, err := c.src.pool.Acquire(ctx)
	if err != nil {
		return nil, c.src.dsn.RedactError(err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		conn.Release()
		return nil, c.src.dsn.RedactError(err)
	}
	// The snapshot's name is the server's own (hex digits and dashes), so
	// quoting it as a literal is enough; SET takes no parameters.
	if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+strings.ReplaceAll(c.snapshot, "'", "''")+"'"); err != nil {
		_ = tx.Rollback(ctx)
		conn.Release()
		return nil, c.src.dsn.RedactError(err)
	}
	if _, err := tx.Exec(ctx, "SELECT "+priceReads); err != nil {
		_ = tx.Rollback(ctx)
		conn.Release()
		return nil, c.src.dsn.RedactError(err)
	}
	return &current{src: c.src, conn: conn, tx: tx}, nil
}

func (c *current) Close() error {
	err := c.tx.Rollback(context.Background())
	c.conn.Release()
	return err
}
