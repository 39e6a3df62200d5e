package source

import (
	"fmt"
	"strings"

	"github.com/dynafold/dynafold/value"
)

// BaseAlias is the SQL alias of an entity's own table (or query) in every
// statement dynafold generates; `where:` filters may use it to qualify
// columns when joins make a name ambiguous.
const BaseAlias = "src"

// Query is a dialect-neutral description of what one entity reads: a base
// table or read-only query, ancestor joins, the columns to select, the key
// that orders and pages the rows, and an optional filter. Drivers turn it
// into SQL with their own quoting; identifiers are always quoted and values
// always bound.
type Query struct {
	// Base is the entity's table; ignored when SQL is set.
	Base TableRef
	// SQL is a read-only SELECT used as the base relation.
	SQL string
	// Joins pre-join ancestors, each LEFT JOIN so that an orphan row is
	// reported (its ancestor columns are NULL) rather than silently dropped.
	Joins []Join
	// Columns is the select list. The first len(Key) entries are the key
	// columns of the base relation, in key order.
	Columns []ColumnRef
	// Key orders and pages the rows: the primary key of the base table or
	// the declared key columns of a query.
	Key []string
	// KeyAliases, when set, gives the alias of each key column ("" for the
	// base relation), for keys that continue into a joined table (a nested
	// child's order columns after its parent's key).
	KeyAliases []string
	// KeyKinds are the value kinds of the key columns.
	KeyKinds []value.Kind
	// Where is an optional boolean filter on the rows.
	Where []WherePart
}

// Join is one ancestor joined into the row.
type Join struct {
	Alias string
	Table TableRef
	On    []JoinOn
	// Inner makes it an INNER JOIN: a nested child's rows are read joined
	// to their parent, so that children of filtered or missing parents are
	// not read at all.
	Inner bool
}

// JoinOn pairs a column of the joined table with a column it must equal:
// one of the base relation (RefAlias "") or of an earlier join.
type JoinOn struct {
	Column    string
	RefAlias  string
	RefColumn string
}

// ColumnRef is a column of the base relation (Alias "") or of a join.
type ColumnRef struct {
	Alias string
	Name  string
	// Cast, when set, is the driver-specific cast applied in the select list.
	Cast string
	// Kind and Elem are the value kinds the reader must produce.
	Kind value.Kind
	Elem value.Kind
}

func (c ColumnRef) String() string {
	if c.Alias == "" {
		return c.Name
	}
	return c.Alias + "." + c.Name
}

// WherePart is a piece of a filter: literal SQL written by the operator, a
// bound argument (a `${var.NAME}` in the mapping), or an identifier that
// the driver quotes: a column (Col, alias "" for the base relation) or a
// table (Table), for filters dynafold generates itself (incremental runs,
// soft deletes).
type WherePart struct {
	SQL   string
	Arg   *string
	Col   *ColumnRef
	Table *TableRef
}

// Dialect is how a driver quotes and binds.
type Dialect interface {
	// Quote quotes an identifier by the engine's rules.
	Quote(ident string) string
	// Placeholder returns the bind marker for the n-th argument (1-based).
	Placeholder(n int) string
	// RowCompare says whether (a, b) > (x, y) row comparison uses indexes.
	RowCompare() bool
	// CastColumn wraps a selected column expression with a cast.
	CastColumn(expr, cast string) string
}

// QuoteRef quotes a possibly schema-qualified table name.
func QuoteRef(d Dialect, r TableRef) string {
	if r.Schema == "" {
		return d.Quote(r.Name)
	}
	return d.Quote(r.Schema) + "." + d.Quote(r.Name)
}

// Statement is generated SQL with its arguments.
type Statement struct {
	SQL  string
	Args []any
}

type builder struct {
	d    Dialect
	sb   strings.Builder
	args []any
}

func (b *builder) bind(v any) {
	b.args = append(b.args, v)
	b.sb.WriteString(b.d.Placeholder(len(b.args)))
}

func (b *builder) col(alias, name string) {
	if alias == "" {
		alias = BaseAlias
	}
	b.sb.WriteString(b.d.Quote(alias))
	b.sb.WriteByte('.')
	b.sb.WriteString(b.d.Quote(name))
}

// from writes the FROM clause with joins.
func (b *builder) from(q *Query) {
	b.sb.WriteString(" FROM ")
	if q.SQL != "" {
		b.sb.WriteString("(")
		b.sb.WriteString(q.SQL)
		b.sb.WriteString(")")
	} else {
		b.sb.WriteString(QuoteRef(b.d, q.Base))
	}
	b.sb.WriteString(" AS ")
	b.sb.WriteString(b.d.Quote(BaseAlias))
	for _, j := range q.Joins {
		if j.Inner {
			b.sb.WriteString(" JOIN ")
		} else {
			b.sb.WriteString(" LEFT JOIN ")
		}
		b.sb.WriteString(QuoteRef(b.d, j.Table))
		b.sb.WriteString(" AS ")
		b.sb.WriteString(b.d.Quote(j.Alias))
		b.sb.WriteString(" ON ")
		for i, on := range j.On {
			if i > 0 {
				b.sb.WriteString(" AND ")
			}
			b.col(j.Alias, on.Column)
			b.sb.WriteString(" = ")
			b.col(on.RefAlias, on.RefColumn)
		}
	}
}

// filters writes the WHERE clause: the operator's filter, the shard range,
// the keyset position, and any extra conditions.
func (b *builder) filters(q *Query, r Range, after []value.Value, conv func(value.Value) any, extra ...func()) {
	var conds []func()
	if len(q.Where) > 0 {
		conds = append(conds, func() {
			b.sb.WriteString("(")
			for _, p := range q.Where {
				switch {
				case p.Arg != nil:
					b.bind(*p.Arg)
				case p.Col != nil:
					b.col(p.Col.Alias, p.Col.Name)
				case p.Table != nil:
					b.sb.WriteString(QuoteRef(b.d, *p.Table))
				default:
					b.sb.WriteString(p.SQL)
				}
			}
			b.sb.WriteString(")")
		})
	}
	if r.Lo != nil {
		conds = append(conds, func() {
			b.col("", q.Key[0])
			b.sb.WriteString(" >= ")
			b.bind(conv(*r.Lo))
		})
	}
	if r.Hi != nil {
		conds = append(conds, func() {
			b.col("", q.Key[0])
			b.sb.WriteString(" < ")
			b.bind(conv(*r.Hi))
		})
	}
	if len(after) > 0 {
		conds = append(conds, func() { b.keyset(q, after, conv) })
	}
	conds = append(conds, extra...)
	for i, c := range conds {
		if i == 0 {
			b.sb.WriteString(" WHERE ")
		} else {
			b.sb.WriteString(" AND ")
		}
		c()
	}
}

// keyset writes "key > after". An after shorter than the key compares
// only that prefix: it resumes after every row whose key starts with it.
func (b *builder) keyset(q *Query, after []value.Value, conv func(value.Value) any) {
	b.compareKey(q, after, ">", ">", conv)
}

// upTo writes "key prefix <= through".
func (b *builder) upTo(q *Query, through []value.Value, conv func(value.Value) any) {
	b.compareKey(q, through, "<", "<=", conv)
}

// compareKey compares the key (or its prefix as long as vals) with vals in
// key order: op on every column but the last, last on the last.
// PostgreSQL compares row values with an index; for MySQL the expanded form
// (a op x OR (a = x AND b last y)) is used because its optimizer turns that
// into a range scan on the first column.
func (b *builder) compareKey(q *Query, vals []value.Value, op, last string, conv func(value.Value) any) {
	n := min(len(vals), len(q.Key))
	if n == 1 || b.d.RowCompare() {
		b.sb.WriteString("(")
		for i := 0; i < n; i++ {
			if i > 0 {
				b.sb.WriteString(", ")
			}
			b.keyCol(q, i)
		}
		b.sb.WriteString(") " + last + " (")
		for i := 0; i < n; i++ {
			if i > 0 {
				b.sb.WriteString(", ")
			}
			b.bind(conv(vals[i]))
		}
		b.sb.WriteString(")")
		return
	}
	b.sb.WriteString("(")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.sb.WriteString(" OR ")
		}
		b.sb.WriteString("(")
		for j := 0; j < i; j++ {
			b.keyCol(q, j)
			b.sb.WriteString(" = ")
			b.bind(conv(vals[j]))
			b.sb.WriteString(" AND ")
		}
		b.keyCol(q, i)
		if i == n-1 {
			b.sb.WriteString(" " + last + " ")
		} else {
			b.sb.WriteString(" " + op + " ")
		}
		b.bind(conv(vals[i]))
		b.sb.WriteString(")")
	}
	b.sb.WriteString(")")
}

// keyCol writes the i-th key column, qualified by its alias.
func (b *builder) keyCol(q *Query, i int) {
	alias := ""
	if i < len(q.KeyAliases) {
		alias = q.KeyAliases[i]
	}
	b.col(alias, q.Key[i])
}

func (b *builder) orderBy(q *Query, desc bool) {
	b.sb.WriteString(" ORDER BY ")
	for i := range q.Key {
		if i > 0 {
			b.sb.WriteString(", ")
		}
		b.keyCol(q, i)
		if desc {
			b.sb.WriteString(" DESC")
		}
	}
}

// selectList writes SELECT and the query's columns, cast where the driver
// asked for it.
func (b *builder) selectList(q *Query) {
	b.sb.WriteString("SELECT ")
	for i, c := range q.Columns {
		if i > 0 {
			b.sb.WriteString(", ")
		}
		alias := c.Alias
		if alias == "" {
			alias = BaseAlias
		}
		expr := b.d.Quote(alias) + "." + b.d.Quote(c.Name)
		if c.Cast != "" {
			expr = b.d.CastColumn(expr, c.Cast)
		}
		b.sb.WriteString(expr)
	}
}

// PageSQL builds the statement that reads one keyset page of q inside r.
// conv converts key values into driver arguments.
func PageSQL(d Dialect, q *Query, r Range, after []value.Value, limit int, conv func(value.Value) any) Statement {
	b := &builder{d: d}
	b.selectList(q)
	b.from(q)
	b.filters(q, r, after, conv)
	b.orderBy(q, false)
	fmt.Fprintf(&b.sb, " LIMIT %d", limit)
	return Statement{SQL: b.sb.String(), Args: b.args}
}

// CountSQL builds the statement that counts the rows of q inside r. Joins
// are included because they are LEFT JOINs on unique keys: they change no
// count, but the filter may reference them.
func CountSQL(d Dialect, q *Query, r Range, conv func(value.Value) any) Statement {
	b := &builder{d: d}
	b.sb.WriteString("SELECT COUNT(*)")
	b.from(q)
	b.filters(q, r, nil, conv)
	return Statement{SQL: b.sb.String(), Args: b.args}
}

// BoundSQL builds the statement that returns the smallest (desc=false) or
// largest first key value of q.
func BoundSQL(d Dialect, q *Query, desc bool, conv func(value.Value) any) Statement {
	b := &builder{d: d}
	b.sb.WriteString("SELECT ")
	b.col("", q.Key[0])
	b.from(q)
	b.filters(q, Full, nil, conv)
	b.sb.WriteString(" ORDER BY ")
	b.col("", q.Key[0])
	if desc {
		b.sb.WriteString(" DESC")
	}
	b.sb.WriteString(" LIMIT 1")
	return Statement{SQL: b.sb.String(), Args: b.args}
}

// RangeSQL builds the statement that reads every row of q inside r whose
// key is after `after` (exclusive) and up to `through` (inclusive, on the
// key prefix through covers), in key order and without a limit: the
// children of one page of parents.
func RangeSQL(d Dialect, q *Query, r Range, after, through []value.Value, conv func(value.Value) any) Statement {
	b := &builder{d: d}
	b.selectList(q)
	b.from(q)
	b.filters(q, r, after, conv, func() { b.upTo(q, through, conv) })
	b.orderBy(q, false)
	return Statement{SQL: b.sb.String(), Args: b.args}
}
