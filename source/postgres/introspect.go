package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Type OIDs from pg_type.dat, stable across PostgreSQL versions.
const (
	oidBool        = 16
	oidBytea       = 17
	oidChar        = 18
	oidName        = 19
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidOID         = 26
	oidJSON        = 114
	oidFloat4      = 700
	oidFloat8      = 701
	oidBpchar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidNumeric     = 1700
	oidUUID        = 2950
	oidJSONB       = 3802
)

// kindOf maps a base type OID to the value kind the reader produces, and
// the cast needed to get there ("" when pgx decodes it natively). Types
// without a native decoder (interval, inet, money, enums, citext, …) are
// read as text, which is exact.
func kindOf(oid uint32, typtype string) (value.Kind, string) {
	switch oid {
	case oidInt2, oidInt4, oidInt8, oidOID:
		return value.Int, ""
	case oidNumeric:
		return value.Decimal, ""
	case oidFloat4, oidFloat8:
		return value.Float, ""
	case oidBool:
		return value.Bool, ""
	case oidText, oidVarchar, oidName, oidChar:
		return value.String, ""
	case oidBpchar:
		// character(n) pads with spaces that mean nothing; the cast to
		// text drops them, as MySQL does for CHAR.
		return value.String, "text"
	case oidUUID:
		return value.String, "text"
	case oidBytea:
		return value.Bytes, ""
	case oidJSON, oidJSONB:
		return value.JSON, "text"
	case oidDate:
		return value.Date, ""
	case oidTimestamp, oidTimestamptz:
		return value.Timestamp, ""
	}
	return value.String, "text"
}

const columnsSQL = `
SELECT a.attname,
       format_type(a.atttypid, a.atttypmod),
       CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END,
       t.typtype,
       COALESCE(CASE WHEN et.typtype = 'd' THEN et.typbasetype ELSE et.oid END, 0),
       COALESCE(et.typtype::text, ''),
       t.typcategory = 'A',
       NOT a.attnotnull,
       a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '',
       a.attgenerated <> ''
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_type et ON et.oid = t.typelem AND t.typcategory = 'A'
WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum`

const uniqueSQL = `
SELECT i.indisprimary, array_agg(a.attname::text ORDER BY k.ord)
FROM pg_index i
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = $1 AND i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
GROUP BY i.indexrelid, i.indisprimary
ORDER BY i.indisprimary DESC, i.indexrelid`

const relationSQL = `
SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname = $1 AND n.nspname = COALESCE(NULLIF($2, ''), current_schema())
  AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`

// Introspect implements source.Source from the system catalogs.
func (s *Source) Introspect(ctx context.Context, refs []source.TableRef) (map[source.TableRef]*source.Table, error) {
	out := map[source.TableRef]*source.Table{}
	for _, ref := range refs {
		var oid uint32
		err := s.pool.QueryRow(ctx, relationSQL, ref.Name, ref.Schema).Scan(&oid)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("looking up table %s: %w", ref, s.dsn.RedactError(err))
		}
		t := &source.Table{Ref: ref}
		rows, err := s.pool.Query(ctx, columnsSQL, oid)
		if err != nil {
			return nil, fmt.Errorf("reading columns of %s: %w", ref, s.dsn.RedactError(err))
		}
		for rows.Next() {
			var (
				c                 source.Column
				typOID, elemOID   uint32
				typtype, elemType string
				isArray           bool
			)
			if err := rows.Scan(&c.Name, &c.DBType, &typOID, &typtype, &elemOID, &elemType, &isArray, &c.Nullable, &c.HasDefault, &c.Generated); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reading columns of %s: %w", ref, err)
			}
			if isArray {
				c.Kind = value.List
				var cast string
				c.Elem, cast = kindOf(elemOID, elemType)
				if cast != "" {
					// Arrays of types without a native decoder are read as text[].
					c.Cast, c.Elem = "text[]", value.String
				}
			} else {
				c.Kind, c.Cast = kindOf(typOID, typtype)
			}
			t.Columns = append(t.Columns, c)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("reading columns of %s: %w", ref, s.dsn.RedactError(err))
		}
		rows, err = s.pool.Query(ctx, uniqueSQL, oid)
		if err != nil {
			return nil, fmt.Errorf("reading keys of %s: %w", ref, s.dsn.RedactError(err))
		}
		for rows.Next() {
			var primary bool
			var cols []string
			if err := rows.Scan(&primary, &cols); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reading keys of %s: %w", ref, err)
			}
			if primary {
				t.PrimaryKey = cols
			}
			t.Unique = append(t.Unique, cols)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("reading keys of %s: %w", ref, s.dsn.RedactError(err))
		}
		out[ref] = t
	}
	return out, nil
}

// DescribeQuery implements source.Source by preparing the statement, which
// reports the result columns without running it.
func (s *Source) DescribeQuery(ctx context.Context, sql string) (*source.Table, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, s.dsn.RedactError(err)
	}
	defer conn.Release()
	sd, err := conn.Conn().PgConn().Prepare(ctx, "", sql, nil)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return nil, fmt.Errorf("query is not valid: %s", pgErr.Message)
		}
		return nil, s.dsn.RedactError(err)
	}
	t := &source.Table{}
	seen := map[string]bool{}
	for _, f := range sd.Fields {
		if seen[f.Name] {
			return nil, fmt.Errorf("query returns two columns named %q; alias them apart", f.Name)
		}
		seen[f.Name] = true
		c := source.Column{Name: f.Name, Nullable: true}
		if dt, ok := conn.Conn().TypeMap().TypeForOID(f.DataTypeOID); ok {
			c.DBType = dt.Name
			if strings.HasPrefix(dt.Name, "_") {
				c.Kind, c.Cast, c.Elem = value.List, "text[]", value.String
				t.Columns = append(t.Columns, c)
				continue
			}
		}
		c.Kind, c.Cast = kindOf(f.DataTypeOID, "")
		t.Columns = append(t.Columns, c)
	}
	return t, nil
}

// Tables implements source.TableLister.
func (s *Source) Tables(ctx context.Context, schema string) ([]source.TableRef, error) {
	rows, err := s.pool.Query(ctx, `
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = COALESCE(NULLIF($1, ''), current_schema()) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')`, schema)
	if err != nil {
		return nil, fmt.Errorf("listing tables: %w", s.dsn.RedactError(err))
	}
	defer rows.Close()
	var out []source.TableRef
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, source.TableRef{Schema: schema, Name: name})
	}
	return out, rows.Err()
}
