package source

import (
	"strings"

	"github.com/dynafold/dynafold/value"
)

// TableRef names a table, optionally schema-qualified.
type TableRef struct {
	Schema string
	Name   string
}

// ParseTableRef splits "schema.table" or "table".
func ParseTableRef(s string) TableRef {
	if i := strings.IndexByte(s, '.'); i >= 0 {
		return TableRef{Schema: s[:i], Name: s[i+1:]}
	}
	return TableRef{Name: s}
}

func (r TableRef) String() string {
	if r.Schema == "" {
		return r.Name
	}
	return r.Schema + "." + r.Name
}

// Table describes a table or the result of a query.
type Table struct {
	Ref        TableRef
	Columns    []Column
	PrimaryKey []string
	// Unique lists the column sets of unique constraints and indexes,
	// including the primary key.
	Unique [][]string
}

// Column describes one column.
type Column struct {
	Name string
	// DBType is the database's own type name, e.g. "numeric(12,2)",
	// "timestamp with time zone", "tinyint(1)".
	DBType string
	// Kind is the value kind the reader produces for this column.
	Kind value.Kind
	// Elem is the element kind when Kind is value.List.
	Elem     value.Kind
	Nullable bool
	// HasDefault: an INSERT that leaves the column out gets a value (a
	// DEFAULT, a sequence, an identity, AUTO_INCREMENT or a generated
	// expression), so a row can be written without it.
	HasDefault bool
	// Generated: the database computes the column (GENERATED ALWAYS); it
	// cannot be written.
	Generated bool
	// Cast is set by a driver when the column must be read through a cast
	// (CastWKT: a spatial column, read as text)
	// (e.g. PostgreSQL types without a native decoder are read as ::text).
	Cast string
}

// Column returns the named column, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// ColumnFold returns the column whose name matches ignoring case, for
// "did you mean" hints.
func (t *Table) ColumnFold(name string) *Column {
	for i := range t.Columns {
		if strings.EqualFold(t.Columns[i].Name, name) {
			return &t.Columns[i]
		}
	}
	return nil
}

// IsUnique reports whether cols (in any order) cover a unique constraint,
// so that joining on them cannot multiply rows.
func (t *Table) IsUnique(cols []string) bool {
	set := make(map[string]bool, len(cols))
	for _, c := range cols {
		set[c] = true
	}
	for _, u := range t.Unique {
		covered := true
		for _, c := range u {
			if !set[c] {
				covered = false
				break
			}
		}
		if covered && len(u) > 0 {
			return true
		}
	}
	return false
}

// Casts with a meaning of their own, which each dialect's CastColumn turns
// into its function: a spatial column read as WKT text (ST_AsText) or as
// GeoJSON (ST_AsGeoJSON).
const (
	CastWKT     = "wkt"
	CastGeoJSON = "geojson"
)
