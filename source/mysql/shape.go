package mysql

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/dynafold/dynafold/source"
)

var (
	_ source.Shaper = (*Source)(nil)
	_ source.Shaper = (*Changes)(nil)
)

// Shapes implements source.Shaper from information_schema: each column's
// COLUMN_TYPE (see lowerType) and nullability, and the primary key's
// columns in order. A table named without a schema is in the DSN's
// database; the result is keyed by the refs as given, and a table that
// does not exist is absent. Sync asks the Source when its mapping no
// longer loads, the Changes while it streams.
//
// Columns carry no Num and shapes no ID: MySQL's ORDINAL_POSITION says
// where a column is, not which column it is, and the binlog, not an ID,
// tells a table dropped and created again.
func (s *Source) Shapes(ctx context.Context, refs []source.TableRef) (map[source.TableRef]*source.TableShape, error) {
	out := map[source.TableRef]*source.TableShape{}
	for _, ref := range refs {
		sh, err := s.shape(ctx, ref)
		if err != nil {
			return nil, err
		}
		if sh != nil {
			out[ref] = sh
		}
	}
	return out, nil
}

// Shapes implements source.Shaper for sync's stream.
func (c *Changes) Shapes(ctx context.Context, refs []source.TableRef) (map[source.TableRef]*source.TableShape, error) {
	return c.src.Shapes(ctx, refs)
}

// shape reads one table's shape; nil when it does not exist.
func (s *Source) shape(ctx context.Context, ref source.TableRef) (*source.TableShape, error) {
	db := s.db
	rows, err := db.QueryContext(ctx, `
		SELECT COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE = 'NO'
		FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?`, ref.Schema, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("reading the shape of %s: %w", ref, s.dsn.RedactError(err))
	}
	sh := &source.TableShape{Columns: map[string]source.ColumnShape{}}
	for rows.Next() {
		var name, typ string
		var notNull bool
		if err := rows.Scan(&name, &typ, &notNull); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading the shape of %s: %w", ref, err)
		}
		sh.Columns[name] = source.ColumnShape{Type: lowerType(typ), NotNull: notNull}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the shape of %s: %w", ref, s.dsn.RedactError(err))
	}
	rows.Close()
	if len(sh.Columns) == 0 {
		return nil, nil // no such table
	}
	keys, err := db.QueryContext(ctx, `
		SELECT COLUMN_NAME
		FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY'
		ORDER BY SEQ_IN_INDEX`, ref.Schema, ref.Name)
	if err != nil {
		return nil, fmt.Errorf("reading the primary key of %s: %w", ref, s.dsn.RedactError(err))
	}
	defer keys.Close()
	for keys.Next() {
		var col string
		if err := keys.Scan(&col); err != nil {
			return nil, fmt.Errorf("reading the primary key of %s: %w", ref, err)
		}
		sh.Key = append(sh.Key, col)
	}
	if err := keys.Err(); err != nil {
		return nil, fmt.Errorf("reading the primary key of %s: %w", ref, s.dsn.RedactError(err))
	}
	return sh, nil
}

// lowerType lowercases a COLUMN_TYPE but for its quoted enum and set
// values, which are data: enum('a','B') and enum('a','b') differ. The
// parsed DDL's types are printed the same way.
func lowerType(t string) string {
	var b strings.Builder
	quoted := false
	for _, r := range t {
		if r == '\'' {
			quoted = !quoted // a doubled quote toggles twice
		}
		if !quoted {
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
