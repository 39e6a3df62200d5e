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
func (s *Source) Shapes(ctx context.Context, refs []source.TableRef) (map[source.TableRef]*source.TableShape, error) {
	out := map[source.TableRef]*source.TableShape{}
	for _, ref := range refs {
		var oid uint32
		err := s.pool.QueryRow(ctx, relationSQL, ref.Name, ref.Schema).Scan(&oid)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("looking up table %s: %w", ref, s.dsn.RedactError(err))
		}
		shape, err := s.shape(ctx, oid)
		if err != nil {
			return nil, fmt.Errorf("reading the definition of %s: %w", ref, s.dsn.RedactError(err))
		}
		shape.ID = strconv.FormatUint(uint64(oid), 10)
		out[ref] = shape
	}
	return out, nil
}

// Shapes reads the tables' shapes for sync (see Source.Shapes).
func (c *Changes) Shapes(ctx context.Context, refs []source.TableRef) (map[source.TableRef]*source.TableShape, error) {
	return c.src.Shapes(ctx, refs)
}

// TableByID finds a table by its oid (source.TableFinder): a mapped table
// renamed is gone under its name and there under another.
func (s *Source) TableByID(ctx context.Context, id string) (source.TableRef, bool, error) {
	var ref source.TableRef
	err := s.pool.QueryRow(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = $1::bigint::oid`, id).Scan(&ref.Schema, &ref.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return ref, false, nil
	}
	if err != nil {
		return ref, false, s.dsn.RedactError(err)
	}
	return canonical(ref), true, nil
}

// TableByID finds a table by its oid (see Source.TableByID).
func (c *Changes) TableByID(ctx context.Context, id string) (source.TableRef, bool, error) {
	return c.src.TableByID(ctx, id)
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

func (src *Source) shape(ctx context.Context, oid uint32) (*source.TableShape, error) {
	s := &source.TableShape{Columns: map[string]source.ColumnShape{}}
	rows, err := src.pool.Query(ctx, shapeColumnsSQL, oid)
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
	if err := src.pool.QueryRow(ctx, shapeStorageSQL, oid).Scan(&s.Storage); err != nil {
		return nil, err
	}
	if s.Key, err = queryStrings(ctx, src, shapeKeySQL, oid); err != nil {
		return nil, err
	}
	rows, err = src.pool.Query(ctx, shapePartitionsSQL, oid)
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

func queryStrings(ctx context.Context, src *Source, sql string, args ...any) ([]string, error) {
	rows, err := src.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
