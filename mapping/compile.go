package mapping

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Schema is what Compile needs to know about the source: the introspected
// tables and the columns of query entities. Callers fill it from a
// source.Source, tests from literals.
type Schema struct {
	Tables map[source.TableRef]*source.Table
	// Queries holds the described columns of each query entity, by entity.
	Queries map[string]*source.Table
	// DefaultSchema qualifies unqualified table names when looking them up
	// (empty: as written).
	DefaultSchema string
	// Names lists the source's tables, when known, so that a table that
	// does not exist can be told apart from one spelled in another case.
	Names []source.TableRef
}

// Options tune Compile.
type Options struct {
	// Vars override the file's vars: (from --var NAME=VALUE).
	Vars map[string]string
	// RequireVars makes an unbound ${var.NAME} an error even without the
	// schema: set by commands that will read the source. (With the schema
	// it is always an error.)
	RequireVars bool
	// UnboundVars lets an unbound ${var.NAME} pass even with the schema:
	// for a caller that checks the mapping against the source's tables
	// but reads no row (table create).
	UnboundVars bool
}

// Compile validates cfg against the source schema and builds the Plan.
// Every problem is reported, each naming its key path; the error is then
// an Errors.
//
// With a nil schema Compile checks everything that needs no database
// (syntax, templates, indexes, types, variables) and treats every table and
// column as existing; Validate does that.
func Compile(cfg *Config, schema *Schema, opts Options) (*Plan, error) {
	var errs Errors
	p := &Plan{Config: cfg, Vars: map[string]string{}}
	p.Table = validateStatic(cfg, &errs)
	for _, v := range cfg.Vars {
		p.Vars[v.Key] = v.Value
	}
	for k, v := range opts.Vars {
		p.Vars[k] = v
	}
	p.Changes = compileChanges(cfg, schema, &errs)
	for _, e := range cfg.Entities {
		if e.Value == nil {
			// "name:" with nothing under it would otherwise vanish from the plan.
			errs.add("entities."+e.Key, "empty entity definition: set from: or query:, and key:")
			continue
		}
		if !validEntityShape(e.Key, e.Value, &errs) {
			continue
		}
		c := &entityCompiler{
			name:        e.Key,
			path:        "entities." + e.Key,
			spec:        e.Value,
			plan:        p,
			schema:      schema,
			static:      schema == nil,
			requireVars: opts.RequireVars,
			unboundVars: opts.UnboundVars,
			errs:        &errs,
			index:       map[ColumnName]int{},
			joins:       map[string]*source.Table{},
		}
		if ep := c.compile(cfg.Defaults); ep != nil {
			p.Entities = append(p.Entities, ep)
		}
	}
	p.Warnings = patternWarnings(cfg, p.Table)
	if len(errs) == 0 {
		// Only once every entity compiled: a broken one writes nothing.
		checkPatternAttributes(cfg, p, &errs)
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// Validate checks everything that needs no database: run it before
// connecting so that a broken file fails fast.
func Validate(cfg *Config, opts Options) error {
	_, err := Compile(cfg, nil, opts)
	return err
}

// SourceTables lists the tables Compile will look up (entities and joins)
// and the query entities whose columns must be described.
func SourceTables(cfg *Config) (tables []source.TableRef, queries map[string]string) {
	seen := map[source.TableRef]bool{}
	add := func(s string) {
		if s == "" {
			return
		}
		r := source.ParseTableRef(s)
		if r.Schema == "" {
			r.Schema = cfg.Source.Schema
		}
		if !seen[r] {
			seen[r] = true
			tables = append(tables, r)
		}
	}
	queries = map[string]string{}
	for _, e := range cfg.Entities {
		if e.Value == nil {
			continue
		}
		if e.Value.Query != "" {
			queries[e.Key] = e.Value.Query
		} else {
			add(e.Value.From)
		}
		for _, j := range e.Value.Join {
			if j.Value != nil {
				add(j.Value.From)
			}
		}
		for _, n := range e.Value.Nest {
			if n.Value != nil {
				add(n.Value.From)
			}
		}
	}
	return tables, queries
}

type entityCompiler struct {
	name   string
	path   string
	spec   *Entity
	plan   *Plan
	schema *Schema
	// static is set when there is no schema: tables and columns are
	// assumed to exist and their kinds are unknown (value.Null).
	static      bool
	requireVars bool
	unboundVars bool
	errs        *Errors

	base  *source.Table
	joins map[string]*source.Table
	cols  []source.ColumnRef
	kinds []value.Kind
	index map[ColumnName]int
	// defaultAlias qualifies bare column names: "" for the entity's own
	// table, the child alias when compiling a nested table's elements.
	defaultAlias string
}

func (c *entityCompiler) lookup(path, name string) *source.Table {
	ref := source.ParseTableRef(name)
	if ref.Schema == "" {
		ref.Schema = c.plan.Config.Source.Schema
	}
	if c.static {
		return &source.Table{Ref: ref}
	}
	t := c.schema.Tables[ref]
	if t == nil {
		c.errs.add(path, "table %q does not exist in the source%s", ref, c.tableHint(ref))
	}
	return t
}

// tableHint names the table the user probably meant: the same name in
// another case (identifiers are quoted, so case matters), or a near miss.
func (c *entityCompiler) tableHint(ref source.TableRef) string {
	var names []string
	for _, n := range c.schema.Names {
		if n.Schema != ref.Schema {
			continue
		}
		if strings.EqualFold(n.Name, ref.Name) {
			return fmt.Sprintf(" (did you mean %q? names are case-sensitive)", n.Name)
		}
		names = append(names, n.Name)
	}
	if s := suggest(ref.Name, names); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

func (c *entityCompiler) compile(defaults *EntityDefaults) *EntityPlan {
	e := c.spec
	ep := &EntityPlan{Name: c.name, table: c.plan.Table, typeAttr: c.plan.Table.TypeAttribute, ttlAttr: c.plan.Table.TTLAttribute}
	ep.names = newEntityNames(ep)
	ep.OnError = PolicyFail
	if defaults != nil && defaults.OnError != "" {
		ep.OnError = Policy(defaults.OnError)
	}
	if e.OnError != "" {
		ep.OnError = Policy(e.OnError)
	}
	q := &source.Query{}
	if !c.compileBase(q) || !c.compileKey(q) {
		return nil
	}
	ep.KeyColumns = q.Key
	c.compileJoins(q)
	c.compileWhere(q)
	ep.userWhere = q.Where
	if ch := c.plan.Changes[q.Base]; ch != nil && q.SQL == "" && ch.Deleted != "" {
		q.Where = andWhere(q.Where, notDeleted("", ch.Deleted)...)
	}
	ep.Items = c.compileItems()
	q.Columns = c.cols
	ep.Query = q
	ep.columns = make([]string, len(c.cols))
	for i, cr := range c.cols {
		ep.columns[i] = cr.String()
	}
	c.compileNests(ep, q)
	c.recordDeps(ep)
	return ep
}

// compileBase resolves what the entity reads, a table or a query, into
// c.base and q; false when it cannot.
func (c *entityCompiler) compileBase(q *source.Query) bool {
	e := c.spec
	if e.Query != "" && c.static {
		c.base = &source.Table{}
		q.SQL = e.Query
	} else if e.Query != "" {
		c.base = c.schema.Queries[c.name]
		if c.base == nil {
			c.errs.add(c.path+".query", "the query could not be described")
			return false
		}
		q.SQL = e.Query
	} else {
		c.base = c.lookup(c.path+".from", e.From)
		if c.base == nil {
			return false
		}
		q.Base = c.base.Ref
	}
	return true
}

// compileKey selects the columns that identify a row into q's key: the
// key orders and pages rows and identifies them in errors. False when
// there is no usable key.
func (c *entityCompiler) compileKey(q *source.Query) bool {
	key := c.spec.PrimaryKey
	if len(key) == 0 {
		key = c.base.PrimaryKey
	}
	if len(key) == 0 && !c.static {
		c.errs.add(c.path, "table %s has no primary key; declare the columns that identify a row in primary_key:", c.base.Ref)
		return false
	}
	for i, k := range key {
		// A column listed twice would be selected once (add dedups) yet
		// counted twice in the key, so row positions and key columns would
		// disagree; nested queries index the row by key position.
		if slices.Contains(key[:i], k) {
			c.errs.add(fmt.Sprintf("%s.primary_key[%d]", c.path, i), "column %q is listed twice", k)
			return false
		}
		col := c.base.Column(k)
		if c.static {
			col = &source.Column{Name: k}
		}
		if col == nil {
			c.errs.add(fmt.Sprintf("%s.primary_key[%d]", c.path, i), "%s", c.unknown(c.base, k))
			return false
		}
		c.add(ColumnName{Name: k}, col)
		q.Key = append(q.Key, k)
		q.KeyKinds = append(q.KeyKinds, col.Kind)
	}
	return true
}

func (c *entityCompiler) unknown(t *source.Table, name string) string {
	msg := fmt.Sprintf("unknown column %q in table %s", name, t.Ref)
	if t.Ref.Name == "" {
		msg = fmt.Sprintf("unknown column %q in the query's result", name)
	}
	if f := t.ColumnFold(name); f != nil {
		return msg + fmt.Sprintf(" (did you mean %q?)", f.Name)
	}
	names := make([]string, len(t.Columns))
	for i, col := range t.Columns {
		names[i] = col.Name
	}
	if s := suggest(name, names); s != "" {
		return msg + fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

// add puts a column in the select list once and returns its position.
func (c *entityCompiler) add(ref ColumnName, col *source.Column) int {
	if i, ok := c.index[ref]; ok {
		return i
	}
	alias := ref.Alias
	if alias == "" {
		alias = c.defaultAlias
	}
	c.cols = append(c.cols, source.ColumnRef{Alias: alias, Name: ref.Name, Cast: col.Cast, Kind: col.Kind, Elem: col.Elem})
	c.kinds = append(c.kinds, col.Kind)
	c.index[ref] = len(c.cols) - 1
	return len(c.cols) - 1
}

// column resolves a column reference of this entity and selects it.
func (c *entityCompiler) column(path string, ref ColumnName) (int, value.Kind, bool) {
	t := c.base
	if ref.Alias != "" {
		t = c.joins[ref.Alias]
		if t == nil {
			aliases := make([]string, 0, len(c.joins))
			for a := range c.joins {
				aliases = append(aliases, a)
			}
			sort.Strings(aliases)
			hint := "declare it under join:"
			if len(aliases) > 0 {
				hint = "joins of this entity: " + strings.Join(aliases, ", ")
			}
			c.errs.add(path, "unknown join alias %q in %q (%s)", ref.Alias, ref, hint)
			return 0, 0, false
		}
	}
	col := t.Column(ref.Name)
	if c.static {
		col = &source.Column{Name: ref.Name, Kind: value.Null}
	}
	if col == nil {
		c.errs.add(path, "%s", c.unknown(t, ref.Name))
		return 0, 0, false
	}
	i := c.add(ref, col)
	return i, col.Kind, true
}
