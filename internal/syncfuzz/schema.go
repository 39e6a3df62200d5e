package syncfuzz

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// kind is how the fuzzer makes values for a column.
type kind int

const (
	kOther kind = iota // a type the fuzzer leaves alone
	kInt
	kBool
	kNumeric
	kFloat
	kText
	kTime
	kDate
	kJSON
	kBytes
	kEnum
)

// column is one source column as the fuzzer sees it: enough to make a
// value the server accepts.
type column struct {
	name string
	// typ is the type's name as information_schema spells it
	// ("character varying", "varchar", "integer"), without its length.
	typ       string
	kind      kind
	nullable  bool
	maxLen    int // characters (bytes for binary); 0 when unbounded
	precision int
	scale     int
	min, max  int64 // integer range
	enum      []string
	// skip: generated or identity-always columns the fuzzer never writes.
	skip bool
	// def: the column has a default, so an insert may leave it out.
	def bool
}

// fkey is a foreign key: cols of the child reference refCols of parent.
type fkey struct {
	child, parent string
	cols, refCols []string
}

// table is one source table with its keys.
type table struct {
	name    string
	cols    []*column
	byName  map[string]*column
	pk      []string
	fks     []*fkey // this table's references to its parents
	refs    []*fkey // other tables' references to this one
	uniques [][]string
}

func (t *table) col(name string) *column { return t.byName[name] }

// inUnique reports whether c is in the primary key or a unique index.
func (t *table) inUnique(c string) bool {
	if slices.Contains(t.pk, c) {
		return true
	}
	for _, u := range t.uniques {
		if slices.Contains(u, c) {
			return true
		}
	}
	return false
}

// referenced reports whether another table's foreign key references
// column c.
func (t *table) referenced(c string) bool {
	for _, f := range t.refs {
		if slices.Contains(f.refCols, c) {
			return true
		}
	}
	return false
}

// fkOf returns the foreign key column c belongs to, if any.
func (t *table) fkOf(c string) *fkey {
	for _, f := range t.fks {
		if slices.Contains(f.cols, c) {
			return f
		}
	}
	return nil
}

// schema is the introspected source: its tables by name.
type schema struct {
	tables map[string]*table
}

// introspect reads the tables named (all base tables when names is
// empty) with their columns, primary keys, unique indexes and foreign
// keys.
func introspect(ctx context.Context, d dialect, db *sql.DB) (*schema, error) {
	s := &schema{tables: map[string]*table{}}
	rows, err := db.QueryContext(ctx, d.columnsQuery())
	if err != nil {
		return nil, fmt.Errorf("reading columns: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var tname, cname, dataType, colType, nullable string
		var maxLen, prec, scale sql.NullInt64
		var hasDefault, generated bool
		if err := rows.Scan(&tname, &cname, &dataType, &colType, &nullable, &maxLen, &prec, &scale, &hasDefault, &generated); err != nil {
			return nil, err
		}
		t := s.tables[tname]
		if t == nil {
			t = &table{name: tname, byName: map[string]*column{}}
			s.tables[tname] = t
		}
		c := &column{name: cname, typ: strings.ToLower(dataType), nullable: nullable == "YES", def: hasDefault, skip: generated,
			maxLen: int(maxLen.Int64), precision: int(prec.Int64), scale: int(scale.Int64)}
		classify(c, strings.ToLower(dataType), strings.ToLower(colType))
		t.cols = append(t.cols, c)
		t.byName[cname] = c
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if err := d.readEnums(ctx, db, s); err != nil {
		return nil, err
	}
	keys, err := d.keys(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("reading keys: %w", err)
	}
	for _, k := range keys {
		t := s.tables[k.table]
		if t == nil {
			continue
		}
		switch {
		case k.primary:
			t.pk = k.cols
		case k.parent != "":
			p := s.tables[k.parent]
			if p == nil {
				continue
			}
			f := &fkey{child: t.name, parent: p.name, cols: k.cols, refCols: k.refCols}
			t.fks = append(t.fks, f)
			p.refs = append(p.refs, f)
		default:
			t.uniques = append(t.uniques, k.cols)
		}
	}
	return s, nil
}

// names returns the table names in a fixed order.
func (s *schema) names() []string {
	var out []string
	for n := range s.tables {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// keyRow is one key the servers report: a primary key, a unique index or
// a foreign key (parent set).
type keyRow struct {
	table   string
	primary bool
	cols    []string
	parent  string
	refCols []string
}

var enumValues = regexp.MustCompile(`'((?:[^']|'')*)'`)

// classify sets the column's kind and range from its type, as the
// server's information_schema spells it.
func classify(c *column, dataType, colType string) {
	unsigned := strings.Contains(colType, "unsigned")
	setInt := func(bits uint) {
		c.kind = kInt
		if unsigned {
			c.min, c.max = 0, int64(1)<<min(bits, 63)-1
		} else {
			c.min, c.max = -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1
		}
	}
	switch dataType {
	case "smallint":
		setInt(16)
	case "integer", "int", "mediumint":
		setInt(32)
		if dataType == "mediumint" {
			setInt(24)
		}
	case "bigint":
		setInt(64)
	case "tinyint":
		if colType == "tinyint(1)" {
			c.kind = kBool
		} else {
			setInt(8)
		}
	case "boolean":
		c.kind = kBool
	case "numeric", "decimal":
		c.kind = kNumeric
		if c.precision == 0 {
			c.precision, c.scale = 12, 2
		}
	case "real", "double precision", "float", "double":
		c.kind = kFloat
	case "text", "character varying", "character", "varchar", "char", "tinytext", "mediumtext", "longtext":
		c.kind = kText
		if c.maxLen > 1<<20 {
			c.maxLen = 0
		}
	case "timestamp with time zone", "timestamp without time zone", "timestamp", "datetime":
		c.kind = kTime
	case "date":
		c.kind = kDate
	case "json", "jsonb":
		c.kind = kJSON
	case "bytea", "blob", "tinyblob", "mediumblob", "longblob", "varbinary", "binary":
		c.kind = kBytes
		if c.maxLen > 1<<20 {
			c.maxLen = 0
		}
	case "enum":
		c.kind = kEnum
		for _, m := range enumValues.FindAllStringSubmatch(colType, -1) {
			c.enum = append(c.enum, strings.ReplaceAll(m[1], "''", "'"))
		}
	case "user-defined":
		c.kind = kEnum // PostgreSQL enums; the values are read after
	}
}

// intRange bounds an integer column's fresh values to what it holds.
func (c *column) intRange() (int64, int64) {
	if c.kind != kInt {
		return 0, 1 << 31
	}
	return c.min, c.max
}
