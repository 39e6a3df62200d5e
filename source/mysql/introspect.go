package mysql

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// kindOf maps information_schema's DATA_TYPE and COLUMN_TYPE to the value
// kind the reader produces, and the cast the select list needs.
func kindOf(dataType, columnType string) (value.Kind, string) {
	dt := strings.ToLower(dataType)
	ct := strings.ToLower(columnType)
	switch dt {
	case "tinyint":
		// MySQL's conventional boolean is tinyint(1).
		if strings.HasPrefix(ct, "tinyint(1)") {
			return value.Bool, ""
		}
		return value.Int, ""
	case "smallint", "mediumint", "int", "integer", "year":
		return value.Int, ""
	case "bigint":
		if strings.Contains(ct, "unsigned") {
			// Values above 2^63-1 do not fit int64; exact text keeps them.
			return value.Decimal, ""
		}
		return value.Int, ""
	case "decimal", "numeric":
		return value.Decimal, ""
	case "float", "double", "real", "double precision":
		return value.Float, ""
	case "bit":
		return value.Int, "UNSIGNED"
	case "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return value.Bytes, ""
	case "json":
		return value.JSON, ""
	case "date":
		return value.Date, ""
	case "datetime", "timestamp":
		return value.Timestamp, ""
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection":
		// Stored as an SRID and WKB, which mean nothing in an item: read as
		// WKT text (a mapping's type: M reads GeoJSON instead).
		return value.String, source.CastWKT
	}
	// char, varchar, text types, enum, set, time, uuid (MariaDB), inet6 …
	return value.String, ""
}

// jsonCheck finds MariaDB's JSON columns, which are LONGTEXT with a
// json_valid(`col`) check constraint.
var jsonCheck = regexp.MustCompile("json_valid\\(`([^`]+)`\\)")

// Introspect implements source.Source from information_schema.
func (s *Source) Introspect(ctx context.Context, refs []source.TableRef) (map[source.TableRef]*source.Table, error) {
	out := map[source.TableRef]*source.Table{}
	for _, ref := range refs {
		t := &source.Table{Ref: ref}
		rows, err := s.db.QueryContext(ctx, `
			SELECT COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, IS_NULLABLE = 'YES',
			       -- MariaDB shows DEFAULT NULL as the word NULL (a text default is quoted).
			       (COLUMN_DEFAULT IS NOT NULL AND COLUMN_DEFAULT <> 'NULL') OR EXTRA LIKE '%auto_increment%' OR EXTRA LIKE '%GENERATED%',
			       EXTRA LIKE '%GENERATED%'
			FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?
			ORDER BY ORDINAL_POSITION`, ref.Schema, ref.Name)
		if err != nil {
			return nil, fmt.Errorf("reading columns of %s: %w", ref, s.dsn.RedactError(err))
		}
		for rows.Next() {
			var c source.Column
			var dataType string
			if err := rows.Scan(&c.Name, &c.DBType, &dataType, &c.Nullable, &c.HasDefault, &c.Generated); err != nil {
				rows.Close()
				return nil, fmt.Errorf("reading columns of %s: %w", ref, err)
			}
			c.Kind, c.Cast = kindOf(dataType, c.DBType)
			t.Columns = append(t.Columns, c)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("reading columns of %s: %w", ref, s.dsn.RedactError(err))
		}
		if len(t.Columns) == 0 {
			continue // no such table
		}
		if err := s.uniqueKeys(ctx, t); err != nil {
			return nil, err
		}
		if s.mariadb {
			if err := s.markJSON(ctx, t); err != nil {
				return nil, err
			}
		}
		out[ref] = t
	}
	return out, nil
}

func (s *Source) uniqueKeys(ctx context.Context, t *source.Table) error {
	rows, err := s.db.QueryContext(ctx, `
		SELECT INDEX_NAME, COLUMN_NAME
		FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND NON_UNIQUE = 0
		ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX`, t.Ref.Schema, t.Ref.Name)
	if err != nil {
		return fmt.Errorf("reading keys of %s: %w", t.Ref, s.dsn.RedactError(err))
	}
	defer rows.Close()
	var cur string
	var cols []string
	flush := func() {
		if cur == "" {
			return
		}
		if cur == "PRIMARY" {
			t.PrimaryKey = cols
		}
		t.Unique = append(t.Unique, cols)
	}
	for rows.Next() {
		var idx, col string
		if err := rows.Scan(&idx, &col); err != nil {
			return fmt.Errorf("reading keys of %s: %w", t.Ref, err)
		}
		if idx != cur {
			flush()
			cur, cols = idx, nil
		}
		cols = append(cols, col)
	}
	flush()
	return s.dsn.RedactError(rows.Err())
}

func (s *Source) markJSON(ctx context.Context, t *source.Table) error {
	rows, err := s.db.QueryContext(ctx, `
		SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS
		WHERE CONSTRAINT_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?`, t.Ref.Schema, t.Ref.Name)
	if err != nil {
		return fmt.Errorf("reading check constraints of %s: %w", t.Ref, s.dsn.RedactError(err))
	}
	defer rows.Close()
	for rows.Next() {
		var clause string
		if err := rows.Scan(&clause); err != nil {
			return err
		}
		for _, m := range jsonCheck.FindAllStringSubmatch(clause, -1) {
			if c := t.Column(m[1]); c != nil && c.Kind == value.String {
				c.Kind = value.JSON
			}
		}
	}
	return s.dsn.RedactError(rows.Err())
}

// DescribeQuery implements source.Source: the query is wrapped in a
// subquery with LIMIT 0, so the server plans it and reports its columns
// without producing rows.
func (s *Source) DescribeQuery(ctx context.Context, q string) (*source.Table, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT * FROM ("+q+") AS `src` LIMIT 0")
	if err != nil {
		return nil, fmt.Errorf("query is not valid: %w", s.dsn.RedactError(err))
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	t := &source.Table{}
	for _, ct := range cts {
		name := strings.ToLower(ct.DatabaseTypeName())
		colType := name
		if strings.HasPrefix(name, "unsigned ") {
			name = strings.TrimPrefix(name, "unsigned ")
			colType = name + " unsigned"
		}
		c := source.Column{Name: ct.Name(), DBType: colType, Nullable: true}
		c.Kind, c.Cast = kindOf(name, colType)
		t.Columns = append(t.Columns, c)
	}
	return t, nil
}

// Tables implements source.TableLister.
func (s *Source) Tables(ctx context.Context, schema string) ([]source.TableRef, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT TABLE_NAME FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE())`, schema)
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
