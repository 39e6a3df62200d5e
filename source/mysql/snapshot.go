package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// snapshot gives each Read its own consistent, read-only transaction.
// MySQL and MariaDB cannot share one snapshot between connections, so the
// guarantee is per shard; Info says so.
type snapshot struct {
	src *Source
}

// Snapshot implements source.Source.
func (s *Source) Snapshot(context.Context, source.SnapshotOptions) (source.Snapshot, error) {
	return &snapshot{src: s}, nil
}

func (s *snapshot) Info() source.SnapshotInfo {
	return source.SnapshotInfo{Note: "each shard is read in its own consistent-snapshot transaction (START TRANSACTION WITH CONSISTENT SNAPSHOT); MySQL cannot share one snapshot between connections"}
}

func (s *snapshot) Close() error { return nil }

func (s *snapshot) begin(ctx context.Context) (*sql.Conn, error) {
	conn, err := s.src.db.Conn(ctx)
	if err != nil {
		return nil, s.src.dsn.RedactError(err)
	}
	for _, stmt := range []string{
		"SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ",
		"START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY",
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			conn.Close()
			return nil, s.src.dsn.RedactError(err)
		}
	}
	return conn, nil
}

func end(conn *sql.Conn) {
	_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
	conn.Close()
}

// Read implements source.Snapshot.
func (s *snapshot) Read(ctx context.Context, q *source.Query, r source.Range, after []value.Value, pageSize int, emit func(value.Row) error) error {
	conn, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer end(conn)
	return source.ReadPages(ctx, myTx{conn, s.src.dsn}, dialect{}, arg, q, r, after, pageSize, emit)
}

// ReadNested implements source.Snapshot.
func (s *snapshot) ReadNested(ctx context.Context, q *source.Query, nests []*source.Query, r source.Range, after []value.Value, pageSize int, emit func(value.Row, [][]value.Row) error) error {
	conn, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer end(conn)
	return source.ReadNested(ctx, myTx{conn, s.src.dsn}, dialect{}, arg, q, nests, r, after, pageSize, emit)
}

// myTx runs statements on the connection holding the snapshot transaction
// and decodes the text protocol's rows.
type myTx struct {
	conn *sql.Conn
	dsn  source.DSN
}

func (t myTx) Query(ctx context.Context, st source.Statement, cols []source.ColumnRef, fn func(value.Row) error) error {
	rows, err := t.conn.QueryContext(ctx, st.SQL, st.Args...)
	if err != nil {
		return t.dsn.RedactError(err)
	}
	defer rows.Close()
	raw := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	var slab value.RowSlab
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return t.dsn.RedactError(err)
		}
		row := slab.Row(len(raw))
		for i, b := range raw {
			v, err := decode(b, cols[i].Kind)
			if err != nil {
				return fmt.Errorf("column %s: %w", cols[i], err)
			}
			row[i] = v
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return t.dsn.RedactError(rows.Err())
}

// decode converts the text protocol's bytes into a value of the column's
// kind. sql.RawBytes is reused by the driver, so everything is copied.
func decode(b sql.RawBytes, kind value.Kind) (value.Value, error) {
	if b == nil {
		return value.NullValue(), nil
	}
	s := string(b)
	switch kind {
	case value.Int:
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return value.DecimalValue(s), nil
		}
		return value.IntValue(i), nil
	case value.Decimal:
		return value.DecimalValue(s), nil
	case value.Float:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return value.Value{}, err
		}
		return value.FloatValue(f), nil
	case value.Bool:
		return value.BoolValue(s != "0"), nil
	case value.Bytes:
		// Never nil: an empty blob is not NULL, and a nil B is written
		// {"B":null}, which DynamoDB refuses as an empty AttributeValue.
		return value.BytesValue(append([]byte{}, b...)), nil
	case value.JSON:
		return value.JSONValue(s), nil
	case value.Date:
		t, err := time.Parse(value.DateLayout, s)
		if err != nil {
			// Zero dates (0000-00-00) have no calendar meaning; keep the text.
			return value.StringValue(s), nil
		}
		return value.DateValue(t), nil
	case value.Timestamp:
		t, err := time.Parse("2006-01-02 15:04:05.999999999", s)
		if err != nil {
			return value.StringValue(s), nil
		}
		return value.TimestampValue(t), nil
	}
	return value.StringValue(s), nil
}

// arg converts a key value into a driver argument.
func arg(v value.Value) any {
	switch v.Kind {
	case value.Null:
		return nil
	case value.Int:
		return v.I
	case value.Float:
		return v.Float()
	case value.Bool:
		return v.I != 0
	case value.Bytes:
		return v.Bytes()
	case value.Date:
		return v.Time().Format(value.DateLayout)
	case value.Timestamp:
		return v.Time().Format("2006-01-02 15:04:05.999999")
	}
	return v.S
}

// Count implements source.Snapshot.
func (s *snapshot) Count(ctx context.Context, q *source.Query, r source.Range, exact bool) (int64, error) {
	if !exact {
		if q.SQL != "" || len(q.Where) > 0 || r != source.Full {
			return -1, nil
		}
		var n sql.NullInt64
		err := s.src.db.QueryRowContext(ctx, `SELECT TABLE_ROWS FROM information_schema.TABLES
			WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?`, q.Base.Schema, q.Base.Name).Scan(&n)
		if err != nil || !n.Valid {
			return -1, nil
		}
		return n.Int64, nil
	}
	conn, err := s.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer end(conn)
	st := source.CountSQL(dialect{}, q, r, arg)
	var n int64
	if err := conn.QueryRowContext(ctx, st.SQL, st.Args...).Scan(&n); err != nil {
		return 0, s.src.dsn.RedactError(err)
	}
	return n, nil
}

// Shards implements source.Snapshot like the PostgreSQL driver: integer
// keys split arithmetically, other keys read as one shard.
func (s *snapshot) Shards(ctx context.Context, q *source.Query, n int) ([]source.Range, error) {
	if n <= 1 || q.KeyKinds[0] != value.Int {
		return []source.Range{source.Full}, nil
	}
	conn, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end(conn)
	var bounds [2]int64
	for i, desc := range []bool{false, true} {
		st := source.BoundSQL(dialect{}, q, desc, arg)
		err := conn.QueryRowContext(ctx, st.SQL, st.Args...).Scan(&bounds[i])
		if errors.Is(err, sql.ErrNoRows) {
			return []source.Range{source.Full}, nil
		}
		if err != nil {
			return nil, s.src.dsn.RedactError(err)
		}
	}
	return source.IntShards(bounds[0], bounds[1], n), nil
}

// Retryable implements source.Snapshot.
func (s *snapshot) Retryable(err error) bool { return Transient(err) }
