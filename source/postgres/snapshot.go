package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// snapshot holds an exported snapshot open on one connection; every reader
// transaction imports it with SET TRANSACTION SNAPSHOT, so all readers of a
// run see the database as of one instant.
type snapshot struct {
	src  *Source
	hold *pgxpool.Conn
	tx   pgx.Tx
	id   string
	info source.SnapshotInfo
}

// Snapshot IDs look like 00000003-0000001B-1; checked before being spliced
// into SET TRANSACTION SNAPSHOT, which takes no bind parameters.
var snapshotIDRe = regexp.MustCompile(`^[0-9A-F]+-[0-9A-F]+(-[0-9]+)?$`)

// Snapshot implements source.Source.
func (s *Source) Snapshot(ctx context.Context, opts source.SnapshotOptions) (source.Snapshot, error) {
	if opts.Import != "" {
		if !snapshotIDRe.MatchString(opts.Import) {
			return nil, fmt.Errorf("snapshot name %q is not one PostgreSQL exports", opts.Import)
		}
		return &snapshot{src: s, id: opts.Import, info: source.SnapshotInfo{Shared: true, ID: opts.Import,
			Note: "every reader imports the snapshot exported when the replication slot was created"}}, nil
	}
	hold, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("opening snapshot: %w", s.dsn.RedactError(err))
	}
	tx, err := hold.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		hold.Release()
		return nil, fmt.Errorf("opening snapshot: %w", s.dsn.RedactError(err))
	}
	snap := &snapshot{src: s, hold: hold, tx: tx}
	var id string
	if err := tx.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&id); err != nil || !snapshotIDRe.MatchString(id) {
		// A server that cannot export (e.g. an old standby) still gives
		// each reader its own repeatable-read view.
		_ = tx.Rollback(ctx)
		hold.Release()
		snap.hold, snap.tx = nil, nil
		snap.info = source.SnapshotInfo{Note: "the server could not export a snapshot; each shard is read in its own repeatable-read transaction"}
		return snap, nil
	}
	snap.id = id
	snap.info = source.SnapshotInfo{Shared: true, ID: id, Note: "every reader imports one exported snapshot (pg_export_snapshot)"}
	return snap, nil
}

func (s *snapshot) Info() source.SnapshotInfo { return s.info }

func (s *snapshot) Close() error {
	if s.tx != nil {
		_ = s.tx.Rollback(context.Background())
		s.hold.Release()
		s.tx, s.hold = nil, nil
	}
	return nil
}

// begin starts a read-only transaction on the snapshot.
func (s *snapshot) begin(ctx context.Context) (*pgxpool.Conn, pgx.Tx, error) {
	conn, err := s.src.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, s.src.dsn.RedactError(err)
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		conn.Release()
		return nil, nil, s.src.dsn.RedactError(err)
	}
	if s.id != "" {
		if _, err := tx.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+s.id+"'"); err != nil {
			_ = tx.Rollback(ctx)
			conn.Release()
			return nil, nil, fmt.Errorf("importing snapshot %s: %w", s.id, s.src.dsn.RedactError(err))
		}
	}
	return conn, tx, nil
}

// Read implements source.Snapshot.
func (s *snapshot) Read(ctx context.Context, q *source.Query, r source.Range, after []value.Value, pageSize int, emit func(value.Row) error) error {
	conn, tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	defer tx.Rollback(context.Background()) //nolint:errcheck // read-only; nothing to keep
	return source.ReadPages(ctx, pgTx{tx, s.src.dsn}, dialect{}, arg, q, r, after, pageSize, emit)
}

// ReadNested implements source.Snapshot.
func (s *snapshot) ReadNested(ctx context.Context, q *source.Query, nests []*source.Query, r source.Range, after []value.Value, pageSize int, emit func(value.Row, [][]value.Row) error) error {
	conn, tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	defer tx.Rollback(context.Background()) //nolint:errcheck // read-only; nothing to keep
	return source.ReadNested(ctx, pgTx{tx, s.src.dsn}, dialect{}, arg, q, nests, r, after, pageSize, emit)
}

// pgTx runs statements in one pgx transaction and decodes their rows.
type pgTx struct {
	tx  pgx.Tx
	dsn source.DSN
}

func (t pgTx) Query(ctx context.Context, st source.Statement, cols []source.ColumnRef, fn func(value.Row) error) error {
	rows, err := t.tx.Query(ctx, st.SQL, st.Args...)
	if err != nil {
		return t.dsn.RedactError(err)
	}
	defer rows.Close()
	var slab value.RowSlab
	var dec *rowDecoder
	for rows.Next() {
		if dec == nil {
			dec = newRowDecoder(rows, cols)
		}
		raw := rows.RawValues()
		row := slab.Row(len(raw))
		if err := dec.decode(raw, row); err != nil {
			return t.dsn.RedactError(err)
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return t.dsn.RedactError(rows.Err())
}

// Count implements source.Snapshot.
func (s *snapshot) Count(ctx context.Context, q *source.Query, r source.Range, exact bool) (int64, error) {
	if !exact {
		if q.SQL != "" || len(q.Where) > 0 || r != source.Full {
			return -1, nil
		}
		var n float64
		err := s.src.pool.QueryRow(ctx, `SELECT c.reltuples FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relname = $1 AND n.nspname = COALESCE(NULLIF($2, ''), current_schema())`, q.Base.Name, q.Base.Schema).Scan(&n)
		if err != nil || n < 0 {
			return -1, nil
		}
		return int64(n), nil
	}
	conn, tx, err := s.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	defer tx.Rollback(context.Background()) //nolint:errcheck // read-only
	st := source.CountSQL(dialect{}, q, r, arg)
	var n int64
	if err := tx.QueryRow(ctx, st.SQL, st.Args...).Scan(&n); err != nil {
		return 0, s.src.dsn.RedactError(err)
	}
	return n, nil
}

// Shards implements source.Snapshot: integer keys split arithmetically
// between their smallest and largest value; other keys are read as one
// shard.
func (s *snapshot) Shards(ctx context.Context, q *source.Query, n int) ([]source.Range, error) {
	if n <= 1 || q.KeyKinds[0] != value.Int {
		return []source.Range{source.Full}, nil
	}
	conn, tx, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	defer tx.Rollback(context.Background()) //nolint:errcheck // read-only
	var lo, hi *int64
	for _, desc := range []bool{false, true} {
		st := source.BoundSQL(dialect{}, q, desc, arg)
		var v int64
		err := tx.QueryRow(ctx, st.SQL, st.Args...).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			return []source.Range{source.Full}, nil
		}
		if err != nil {
			return nil, s.src.dsn.RedactError(err)
		}
		if desc {
			hi = &v
		} else {
			lo = &v
		}
	}
	return source.IntShards(*lo, *hi, n), nil
}

// Retryable implements source.Snapshot: a lost connection or a terminated
// backend (pg_terminate_backend raises admin_shutdown, 57P01) can be
// retried while the snapshot-holding session is alive.
func (s *snapshot) Retryable(err error) bool { return Transient(err) }
