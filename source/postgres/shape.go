package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/dynafold/dynafold/source"
)

// Shapes implements source.Shaper from the catalog: each column's attnum
// (a column dropped and added again has a new one), its type with its
// modifier as format_type prints it, NOT NULL; the primary key; the
// relfilenode, which a table rewrite changes (ALTER ... TYPE, USING,
// VACUUM FULL, CLUSTER) though logical decoding streams none of the rows
// it rewrote; and the partitions with theirs.
func (c *Changes) Shapes(ctx context.Context, refs []source.TableRef) (map[source.TableRef]*source.TableShape, error) {
	out := map[source.TableRef]*source.TableShape{}
	for _, ref := range refs {
		var oid uint32
		err := c.src.pool.QueryRow(ctx, relationSQL, ref.Name, ref.Schema).Scan(&oid)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("looking up table %s: %w", ref, c.src.dsn.RedactError(err))
		}
		s, err := c.shape(ctx, oid)
		if err != nil {
			return nil, fmt.Errorf("reading the definition of %s: %w", ref, c.src.dsn.RedactError(err))
		}
		s.ID = strconv.FormatUint(uint64(oid), 10)
		out[ref] = s
	}
	return out, nil
}

// SilentDDL marks pgoutput's log, which carries no DDL (see cdc.SilentDDL).
func (c *Changes) SilentDDL() {}

const shapeColumnsSQL = `
SELECT a.attname, a.attnum, format_type(a.atttypid, a.atttypmod), a.attnotnull
FROM pg_attribute a WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped`

// A partitioned table has no storage of its own (relfilenode 0).
const shapeStorageSQL = `SELECT CASE WHEN relfilenode = 0 THEN '' ELSE relfilenode::text END FROM pg_class WHERE oid = $1`

const shapeKeySQL = `
SELECT a.attname FROM pg_index i
CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = $1 AND i.indisprimary ORDER BY k.ord`

const shapePartitionsSQL = `
SELECT format('%I.%I', n.nspname, c.relname), c.relfilenode::text
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE i.inhparent = $1`

func (c *Changes) shape(ctx context.Context, oid uint32) (*source.TableShape, error) {
	s := &source.TableShape{Columns: map[string]source.ColumnShape{}}
	rows, err := c.src.pool.Query(ctx, shapeColumnsSQL, oid)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name, typ string
		var num int16
		var notNull bool
		if err := rows.Scan(&name, &num, &typ, &notNull); err != nil {
			rows.Close()
			return nil, err
		}
		s.Columns[name] = source.ColumnShape{Num: int(num), Type: typ, NotNull: notNull}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := c.src.pool.QueryRow(ctx, shapeStorageSQL, oid).Scan(&s.Storage); err != nil {
		return nil, err
	}
	if s.Key, err = queryStrings(ctx, c, shapeKeySQL, oid); err != nil {
		return nil, err
	}
	rows, err = c.src.pool.Query(ctx, shapePartitionsSQL, oid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name, storage string
		if err := rows.Scan(&name, &storage); err != nil {
			return nil, err
		}
		if s.Partitions == nil {
			s.Partitions = map[string]string{}
		}
		s.Partitions[name] = storage
	}
	return s, rows.Err()
}

func queryStrings(ctx context.Context, c *Changes, sql string, args ...any) ([]string, error) {
	rows, err := c.src.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
