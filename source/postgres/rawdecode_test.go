package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// TestRawDecodeEqualsValues: what the reader makes from the raw column
// bytes equals what decode makes from rows.Values(), for every type kindOf
// knows and their edge values, NULLs included.
func TestRawDecodeEqualsValues(t *testing.T) {
	dsn := testenv.NewPostgresDB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
CREATE TABLE t (
  i2 int2, i4 int4, i8 int8, o oid, n numeric, f4 float4, f8 float8, b bool,
  tx text, vc varchar(10), nm name, ch "char", bp char(5), u uuid, by bytea,
  js json, jb jsonb, d date, ts timestamp, tz timestamptz, ia int4[], ta text[], iv interval);
INSERT INTO t VALUES
  (-32768, -2147483648, -9223372036854775808, 0, -12.3400, -3.4e38, '-Infinity', false,
   '', 'a', 'n', 'x', 'ab', '00000000-0000-0000-0000-000000000000', '\x00ff',
   '{"a": [1, 2]}', '{"b": null}', '0001-01-01', '1970-01-01 00:00:00', '2024-02-29 23:59:59.999999+05',
   '{1,NULL,3}', '{"x","y z"}', '1 day'),
  (32767, 2147483647, 9223372036854775807, 4294967295, 99999999999999999999999999999999999999, 1.5, 'NaN', true,
   'héllo ☃ 𝄞 "q" \ end', 'ten chars!', repeat('n', 63), 'y', 'abcde', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '',
   '[]', '{}', 'infinity', '294276-12-31 23:59:59', '-infinity', '{}', '{}', '-1 mon'),
  (0, 0, 0, 1, 0, 0, -0.0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (NULL, NULL, NULL, NULL, NULL, NULL, 1e308, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`)
	require.NoError(t, err)

	type col struct {
		name string
		oid  uint32
		elem uint32
	}
	cols := []col{{"i2", oidInt2, 0}, {"i4", oidInt4, 0}, {"i8", oidInt8, 0}, {"o", oidOID, 0}, {"n", oidNumeric, 0},
		{"f4", oidFloat4, 0}, {"f8", oidFloat8, 0}, {"b", oidBool, 0}, {"tx", oidText, 0}, {"vc", oidVarchar, 0},
		{"nm", oidName, 0}, {"ch", oidChar, 0}, {"bp", oidBpchar, 0}, {"u", oidUUID, 0}, {"by", oidBytea, 0},
		{"js", oidJSON, 0}, {"jb", oidJSONB, 0}, {"d", oidDate, 0}, {"ts", oidTimestamp, 0}, {"tz", oidTimestamptz, 0},
		{"ia", 1007, oidInt4}, {"ta", 1009, oidText}, {"iv", 1186, 0}}
	sql := "SELECT "
	refs := make([]source.ColumnRef, len(cols))
	for i, c := range cols {
		kind, cast := kindOf(c.oid, "b")
		var elem value.Kind
		if c.elem != 0 {
			kind = value.List
			elem, _ = kindOf(c.elem, "b")
		}
		refs[i] = source.ColumnRef{Name: c.name, Cast: cast, Kind: kind, Elem: elem}
		if i > 0 {
			sql += ", "
		}
		if cast != "" {
			sql += c.name + "::" + cast
		} else {
			sql += c.name
		}
	}
	sql += " FROM t ORDER BY i2 NULLS LAST, f8"

	var want []value.Row
	rows, err := conn.Query(ctx, sql)
	require.NoError(t, err)
	for rows.Next() {
		vals, err := rows.Values()
		require.NoError(t, err)
		row := make(value.Row, len(vals))
		for i, v := range vals {
			row[i] = decode(v, refs[i].Kind, refs[i].Elem)
		}
		want = append(want, row)
	}
	require.NoError(t, rows.Err())
	require.Len(t, want, 4)

	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // read-only
	var got []value.Row
	err = pgTx{tx: tx}.Query(ctx, source.Statement{SQL: sql}, refs, func(r value.Row) error {
		got = append(got, append(value.Row(nil), r...))
		return nil
	})
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for r := range want {
		for i := range want[r] {
			w, g := want[r][i], got[r][i]
			assert.Equal(t, w, g, "row %d column %s", r, cols[i].name)
		}
	}
	// The fast path is taken for the types it claims.
	rows, err = conn.Query(ctx, "SELECT i2, i4, i8, f8, b, tx, vc, nm, bp::text, n FROM t")
	require.NoError(t, err)
	defer rows.Close()
	d := newRowDecoder(rows, make([]source.ColumnRef, 10))
	assert.Equal(t, []rawKind{rawInt2, rawInt4, rawInt8, rawFloat8, rawBool, rawText, rawText, rawText, rawText, rawCodec}, d.fast)
}
