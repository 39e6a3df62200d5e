package mapping

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

// reversedOn explains a join's on: written {child_column: parent_column}
// when that is what it looks like: the key is a column of this entity's
// table, not the joined one, and the value a column of the joined table.
func (c *entityCompiler) reversedOn(joined *source.Table, key, val string) string {
	ref := ParseColumnName(val)
	if ref.Alias != "" || c.base == nil || joined.Column(ref.Name) == nil || c.base.Column(key) == nil {
		return ""
	}
	return fmt.Sprintf("written the wrong way round: on: pairs {parent_column: child_column}, the joined table's column first; "+
		"%q is a column of %s (this entity's table) and %q of %s (the joined table), so write on: {%s: %s}",
		key, c.base.Ref, ref.Name, joined.Ref, ref.Name, key)
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
	if e.Query != "" && c.static {
		c.base = &source.Table{}
		q.SQL = e.Query
	} else if e.Query != "" {
		c.base = c.schema.Queries[c.name]
		if c.base == nil {
			c.errs.add(c.path+".query", "the query could not be described")
			return nil
		}
		q.SQL = e.Query
	} else {
		c.base = c.lookup(c.path+".from", e.From)
		if c.base == nil {
			return nil
		}
		q.Base = c.base.Ref
	}
	// The key orders and pages rows and identifies them in errors.
	key := e.PrimaryKey
	if len(key) == 0 {
		key = c.base.PrimaryKey
	}
	if len(key) == 0 && !c.static {
		c.errs.add(c.path, "table %s has no primary key; declare the columns that identify a row in primary_key:", c.base.Ref)
		return nil
	}
	for i, k := range key {
		// A column listed twice would be selected once (add dedups) yet
		// counted twice in the key, so row positions and key columns would
		// disagree; nested queries index the row by key position.
		if slices.Contains(key[:i], k) {
			c.errs.add(fmt.Sprintf("%s.primary_key[%d]", c.path, i), "column %q is listed twice", k)
			return nil
		}
		col := c.base.Column(k)
		if c.static {
			col = &source.Column{Name: k}
		}
		if col == nil {
			c.errs.add(fmt.Sprintf("%s.primary_key[%d]", c.path, i), "%s", c.unknown(c.base, k))
			return nil
		}
		c.add(ColumnName{Name: k}, col)
		q.Key = append(q.Key, k)
		q.KeyKinds = append(q.KeyKinds, col.Kind)
	}
	ep.KeyColumns = q.Key
	c.compileJoins(q)
	c.compileWhere(q)
	ep.userWhere = q.Where
	if ch := c.plan.Changes[q.Base]; ch != nil && q.SQL == "" && ch.Deleted != "" {
		q.Where = andWhere(q.Where, notDeleted("", ch.Deleted)...)
	}

	if e.Items == nil {
		it := c.compileItem(c.path, "", &ItemSpec{Type: e.Type, Key: e.Key, Index: e.Index, Attributes: e.Attributes}, nil)
		if it != nil {
			ep.Items = append(ep.Items, it)
		}
	} else {
		if e.Key.SK != "" {
			c.errs.add(c.path+".key.sk", "with items:, each item sets its own key.sk")
		}
		if len(e.Items) == 0 {
			// Otherwise every row would be read and no item written.
			c.errs.add(c.path+".items", "name at least one item, or remove items:")
		}
		c.checkOverridden(e)
		for _, ie := range e.Items {
			spec := ie.Value
			if spec == nil {
				c.errs.add(c.path+".items."+ie.Key, "empty item definition")
				continue
			}
			it := c.compileItem(c.path+".items."+ie.Key, ie.Key, spec, e)
			if it != nil {
				ep.Items = append(ep.Items, it)
			}
		}
	}
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

func (c *entityCompiler) compileJoins(q *source.Query) {
	for _, je := range c.spec.Join {
		path := c.path + ".join." + je.Key
		alias, spec := je.Key, je.Value
		if spec == nil || spec.From == "" {
			c.errs.add(path+".from", "missing the table to join")
			continue
		}
		if alias == source.BaseAlias || strings.ContainsAny(alias, ".${}| ") {
			c.errs.add(path, "%q cannot be a join alias", alias)
			continue
		}
		t := c.lookup(path+".from", spec.From)
		if t == nil {
			continue
		}
		if len(spec.On) == 0 {
			c.errs.add(path+".on", "missing the column pairing, e.g. on: {id: %s_id}", alias)
			continue
		}
		j := source.Join{Alias: alias, Table: t.Ref}
		var joined []string
		ok := true
		for _, on := range spec.On {
			if c.static {
				ref := ParseColumnName(on.Value)
				if ref.Alias != "" && c.joins[ref.Alias] == nil {
					c.errs.add(path+".on."+on.Key, "%q refers to alias %q, which must be joined before %q", on.Value, ref.Alias, alias)
					ok = false
				}
				continue
			}
			if t.Column(on.Key) == nil {
				if msg := c.reversedOn(t, on.Key, on.Value); msg != "" {
					c.errs.add(path+".on", "%s", msg)
					ok = false
					continue
				}
				c.errs.add(path+".on."+on.Key, "%s", c.unknown(t, on.Key))
				ok = false
				continue
			}
			ref := ParseColumnName(on.Value)
			if ref.Alias != "" && c.joins[ref.Alias] == nil {
				c.errs.add(path+".on."+on.Key, "%q refers to alias %q, which must be joined before %q", on.Value, ref.Alias, alias)
				ok = false
				continue
			}
			refTable := c.base
			if ref.Alias != "" {
				refTable = c.joins[ref.Alias]
			}
			if refTable.Column(ref.Name) == nil {
				c.errs.add(path+".on."+on.Key, "%s", c.unknown(refTable, ref.Name))
				ok = false
				continue
			}
			j.On = append(j.On, source.JoinOn{Column: on.Key, RefAlias: ref.Alias, RefColumn: ref.Name})
			joined = append(joined, on.Key)
		}
		if ok && !c.static && !t.IsUnique(joined) {
			c.errs.add(path+".on", "joining %s on (%s) could match several rows per %s row; join on its primary key or a unique key", t.Ref, strings.Join(joined, ", "), c.name)
			ok = false
		}
		c.joins[alias] = t
		if ok {
			q.Joins = append(q.Joins, j)
		}
	}
}

// compileWhere turns `where:` into SQL pieces and bound arguments.
func (c *entityCompiler) compileWhere(q *source.Query) {
	w := c.spec.Where
	if strings.TrimSpace(w) == "" {
		return
	}
	path := c.path + ".where"
	for len(w) > 0 {
		i := strings.Index(w, "${")
		if i < 0 {
			q.Where = append(q.Where, source.WherePart{SQL: w})
			break
		}
		if i > 0 {
			q.Where = append(q.Where, source.WherePart{SQL: w[:i]})
		}
		end := strings.IndexByte(w[i:], '}')
		if end < 0 {
			c.errs.add(path, "unterminated \"${\"")
			return
		}
		name := strings.TrimSpace(w[i+2 : i+end])
		if !strings.HasPrefix(name, "var.") {
			c.errs.add(path, "only ${var.NAME} placeholders may appear in where:, found ${%s}", name)
			return
		}
		name = strings.TrimPrefix(name, "var.")
		val, ok := c.plan.Vars[name]
		if !ok && (!c.static || c.requireVars) && !c.unboundVars {
			c.errs.add(path, "uses ${var.%s} but it has no value; pass --var %s=VALUE or set vars.%s", name, name, name)
			return
		}
		// Without the source (table create, patterns, dump) no row is
		// read, so an unbound variable is only checked when reading.
		q.Where = append(q.Where, source.WherePart{Arg: &val})
		w = w[i+end+1:]
	}
}

// template parses and resolves a template, returning the kind of its
// value when it is a single expression.
func (c *entityCompiler) template(path, src string) (*Template, value.Kind, bool) {
	t, err := ParseTemplate(src)
	if err != nil {
		c.errs.add(path, "bad template %q: %v", src, err)
		return nil, 0, false
	}
	kind := value.String
	ok := true
	for _, e := range t.Exprs() {
		i, k, found := c.column(path, e.Ref)
		if !found {
			ok = false
			continue
		}
		e.col = i
		for _, tr := range e.Transforms {
			if k == value.Null { // static validation: kind unknown
				k = tr.resultKind()
				continue
			}
			if err := tr.check(k); err != nil {
				c.errs.add(path, "in %q: %v (column %s is %s)", src, err, e.Ref, c.kindName(i))
				ok = false
				break
			}
			k = tr.resultKind()
		}
		if k == value.List && len(t.parts) > 1 {
			c.errs.add(path, "column %s is an array and cannot be part of a text template", e.Ref)
			ok = false
		}
		kind = k
	}
	if _, single := t.Single(); !single {
		kind = value.String
	}
	return t, kind, ok
}

func (c *entityCompiler) kindName(i int) string {
	return c.kinds[i].String()
}

// compileItem builds one item plan; parent is set for items: entries,
// whose key, index and attributes extend the entity's.
func (c *entityCompiler) compileItem(path, name string, spec *ItemSpec, parent *Entity) *ItemPlan {
	tbl := c.plan.Table
	it := &ItemPlan{Name: name, Type: spec.Type}
	if it.Type == "" {
		switch {
		case parent != nil && parent.Type != "":
			it.Type = parent.Type + "#" + name
		case parent != nil:
			it.Type = c.name + "#" + name
		default:
			it.Type = c.name
		}
	}
	if tbl.TypeAttribute != "" {
		it.typeAV = &types.AttributeValueMemberS{Value: it.Type}
	}
	keys := spec.Key
	if parent != nil && keys.PK == "" {
		keys.PK = parent.Key.PK
	}
	pkPath, skPath := path+".key.pk", path+".key.sk"
	if parent != nil && spec.Key.PK == "" {
		pkPath = c.path + ".key.pk"
	}
	ok := true
	if keys.PK == "" {
		c.errs.add(pkPath, "missing the partition key template, e.g. pk: \"ORDER#${id}\"")
		ok = false
	} else if t, k, good := c.template(pkPath, keys.PK); good {
		it.PK = t
		ok = c.checkKeyKind(pkPath, t, k, tbl.PK.Type) && ok
	} else {
		ok = false
	}
	switch {
	case tbl.SK == nil && keys.SK != "":
		c.errs.add(skPath, "the table has no sort key; remove sk or declare target.key.sk")
		ok = false
	case tbl.SK != nil && keys.SK == "":
		c.errs.add(skPath, "missing the sort key template (the table's sort key is %s)", tbl.SK.Name)
		ok = false
	case tbl.SK != nil:
		if t, k, good := c.template(skPath, keys.SK); good {
			it.SK = t
			ok = c.checkKeyKind(skPath, t, k, tbl.SK.Type) && ok
		} else {
			ok = false
		}
	}

	seen := map[string]string{}
	addAttr := func(a *attrPlan) {
		if prev, dup := seen[a.name]; dup {
			c.errs.add(a.path, "attribute %q is already set at %s", a.name, prev)
			ok = false
			return
		}
		seen[a.name] = a.path
		a.json = jsonName(a.name)
		it.attrs = append(it.attrs, a)
	}
	reserved := func(p, name string) bool {
		switch {
		case name == tbl.PK.Name || (tbl.SK != nil && name == tbl.SK.Name):
			c.errs.add(p, "%q is the table's key; set it under key:", name)
		case name == tbl.TypeAttribute:
			c.errs.add(p, "%q is the type attribute, which dynafold sets from the entity's type", name)
		case name == tbl.TTLAttribute:
			c.errs.add(p, "%q is the TTL attribute; compute it with ttl: {from: COLUMN, offset: DURATION}", name)
		case name == "":
			c.errs.add(p, "empty attribute name")
		case len(name) > MaxAttributeNameBytes:
			c.errs.add(p, "attribute names are at most %d bytes", MaxAttributeNameBytes)
		default:
			return false
		}
		ok = false
		return true
	}

	// Index key templates are sugar for the attributes the index is keyed on.
	indexes := spec.Index
	if parent != nil {
		indexes = mergeIndex(parent.Index, spec.Index)
	}
	for _, ie := range indexes {
		ipath := path + ".index." + ie.Key
		if _, own := spec.Index.Get(ie.Key); parent != nil && !own {
			ipath = c.path + ".index." + ie.Key // written on the entity, not the item
		}
		ix := tbl.Index(ie.Key)
		if ix == nil {
			c.errs.add(ipath, "index %q is not declared under target.indexes (declared: %s)", ie.Key, strings.Join(indexNames(tbl), ", "))
			ok = false
			continue
		}
		tmpls := ie.Value
		if tmpls == nil {
			continue
		}
		var when *condPlan
		if tmpls.When != nil {
			when = c.condition(ipath+".when", tmpls.When)
		}
		set := func(kpath string, attr *KeyAttr, src string) {
			if src == "" {
				return
			}
			if attr == nil {
				c.errs.add(kpath, "index %s has no sort key", ix.Name)
				ok = false
				return
			}
			if attr.Name == tbl.PK.Name || (tbl.SK != nil && attr.Name == tbl.SK.Name) {
				c.errs.add(kpath, "index %s uses the table's own key attribute %q here; it is set by key:", ix.Name, attr.Name)
				ok = false
				return
			}
			t, k, good := c.template(kpath, src)
			if !good {
				ok = false
				return
			}
			if !c.checkKeyKind(kpath, t, k, attr.Type) {
				ok = false
				return
			}
			addAttr(&attrPlan{name: attr.Name, path: kpath, tmpl: t, col: -1, typ: attr.Type, keyType: attr.Type, keyLimit: keyLimit(ix, attr), when: when, fromIndex: true})
		}
		if !ix.Global && tmpls.PK != "" {
			c.errs.add(ipath+".pk", "a local index shares the table's partition key; set only sk")
			ok = false
		} else {
			set(ipath+".pk", &ix.PK, tmpls.PK)
		}
		set(ipath+".sk", ix.SK, tmpls.SK)
	}

	attrs := spec.Attributes
	if parent != nil && (spec.Inherit == nil || *spec.Inherit) {
		attrs = append(append(OrderedMap[*AttributeSpec]{}, parent.Attributes...), spec.Attributes...)
	}
	for _, ae := range attrs {
		apath := path + ".attributes." + ae.Key
		if parent != nil && containsKey(parent.Attributes, ae.Key) && !containsKey(spec.Attributes, ae.Key) {
			apath = c.path + ".attributes." + ae.Key
		}
		if reserved(apath, ae.Key) {
			continue
		}
		a := c.attribute(apath, ae.Key, ae.Value)
		if a == nil {
			ok = false
			continue
		}
		addAttr(a)
	}

	if ttl := c.spec.TTL; ttl != nil && (parent == nil || name == firstItemName(parent)) {
		tpath := c.path + ".ttl"
		if tbl.TTLAttribute == "" {
			c.errs.add(tpath, "ttl: needs target.ttl_attribute, the attribute DynamoDB expires items by")
			ok = false
		} else if ttl.From == "" {
			c.errs.add(tpath+".from", "missing the column the expiry is computed from")
			ok = false
		} else {
			off, err := parseOffset(ttl.Offset)
			if err != nil {
				c.errs.add(tpath+".offset", "%v", err)
				ok = false
			}
			if i, k, found := c.column(tpath+".from", ParseColumnName(ttl.From)); found {
				switch k {
				case value.Timestamp, value.Date, value.Int, value.Decimal, value.Null:
					it.ttl = &ttlPlan{col: i, offset: off}
				default:
					c.errs.add(tpath+".from", "column %s is %s; a TTL is computed from a date, a timestamp or epoch seconds", ttl.From, k)
					ok = false
				}
			} else {
				ok = false
			}
		}
	}
	if !ok {
		return nil
	}
	it.halves = halfKeys(tbl, it.attrs)
	return it
}

// halfKeys lists the global indexes with a sort key whose two key
// attributes, neither of them the table's key, this item writes and so may
// get one without the other (a NULL in one template, a column that is
// NULL): such an item is not in the index, and the half it got is left off
// when it exists only for that index (written by an index: template,
// keying no other index), unless the index says half_key: keep.
func halfKeys(tbl *TableSchema, attrs []*attrPlan) []halfKey {
	tableKey := func(n string) bool { return n == tbl.PK.Name || (tbl.SK != nil && n == tbl.SK.Name) }
	produced := map[string]bool{}
	onlyIndex := map[string]bool{} // produced by index: templates alone, not attributes:
	for _, a := range attrs {
		if !produced[a.name] {
			onlyIndex[a.name] = true
		}
		produced[a.name] = true
		onlyIndex[a.name] = onlyIndex[a.name] && a.fromIndex
	}
	// keyUses counts the indexes each attribute keys.
	keyUses := map[string]int{}
	for _, ix := range tbl.Indexes {
		keyUses[ix.PK.Name]++
		if ix.SK != nil && ix.SK.Name != ix.PK.Name {
			keyUses[ix.SK.Name]++
		}
	}
	var out []halfKey
	for _, ix := range tbl.Indexes {
		if !ix.Global || ix.SK == nil {
			continue // a local index's partition key is the table's: always there
		}
		pk, sk := ix.PK.Name, ix.SK.Name
		// With the table's own key as one half, a missing other half is
		// the ordinary sparse index: nothing is written in vain. An item
		// that never writes one half is never in the index at all.
		if tableKey(pk) || tableKey(sk) || !produced[pk] || !produced[sk] {
			continue
		}
		out = append(out, halfKey{
			index: ix.Name, pk: pk, sk: sk,
			dropPK: !ix.KeepHalfKey && onlyIndex[pk] && keyUses[pk] == 1,
			dropSK: !ix.KeepHalfKey && onlyIndex[sk] && keyUses[sk] == 1,
		})
	}
	return out
}

// checkOverridden parses the entity's key.pk and index templates that
// every item of items: replaces with its own. They are never compiled, but
// a malformed one must not pass validation unnoticed.
func (c *entityCompiler) checkOverridden(e *Entity) {
	pkUsed := false
	indexUsed := map[string]bool{}
	for _, ie := range e.Items {
		if ie.Value == nil {
			continue
		}
		pkUsed = pkUsed || ie.Value.Key.PK == ""
		for _, ix := range e.Index {
			if _, over := ie.Value.Index.Get(ix.Key); !over {
				indexUsed[ix.Key] = true
			}
		}
	}
	check := func(path, src string) {
		if src == "" {
			return
		}
		if _, err := ParseTemplate(src); err != nil {
			c.errs.add(path, "bad template %q: %v", src, err)
		}
	}
	if !pkUsed {
		check(c.path+".key.pk", e.Key.PK)
	}
	for _, ix := range e.Index {
		if !indexUsed[ix.Key] && ix.Value != nil {
			check(c.path+".index."+ix.Key+".pk", ix.Value.PK)
			check(c.path+".index."+ix.Key+".sk", ix.Value.SK)
		}
	}
}

func firstItemName(e *Entity) string {
	if len(e.Items) == 0 {
		return ""
	}
	return e.Items[0].Key
}

func containsKey[T any](m OrderedMap[T], k string) bool {
	_, ok := m.Get(k)
	return ok
}

// mergeIndex lets an item's index templates replace the entity's, per index.
func mergeIndex(base, over OrderedMap[*IndexTemplates]) OrderedMap[*IndexTemplates] {
	out := OrderedMap[*IndexTemplates]{}
	for _, e := range base {
		if _, replaced := over.Get(e.Key); !replaced {
			out = append(out, e)
		}
	}
	return append(out, over...)
}

func indexNames(t *TableSchema) []string {
	if len(t.Indexes) == 0 {
		return []string{"none"}
	}
	out := make([]string, len(t.Indexes))
	for i, ix := range t.Indexes {
		out[i] = ix.Name
	}
	return out
}

func keyLimit(ix *Index, attr *KeyAttr) int {
	if attr == &ix.PK {
		return MaxPartitionKeyBytes
	}
	return MaxSortKeyBytes
}

// checkKeyKind rejects, before any row is read, a key template whose value
// can never have the key attribute's type.
func (c *entityCompiler) checkKeyKind(path string, t *Template, k value.Kind, want AttrType) bool {
	if k == value.Null {
		return true // static validation: kind unknown
	}
	switch want {
	case TypeN:
		if _, single := t.Single(); !single {
			// Text with literals can still be numeric ("${a}${b}"); checked per row.
			return true
		}
		switch k {
		case value.Int, value.Decimal, value.Float, value.String, value.Timestamp, value.Date:
			return true
		}
	case TypeB:
		if k == value.Bytes || k == value.String {
			return true
		}
	default:
		if k != value.List && k != value.JSON && k != value.Bytes {
			return true
		}
	}
	c.errs.add(path, "template %q gives %s values, which cannot be a %s key", t.src, k, want)
	return false
}

func (c *entityCompiler) attribute(path, name string, spec *AttributeSpec) *attrPlan {
	if spec == nil {
		c.errs.add(path, "missing attribute definition")
		return nil
	}
	a := &attrPlan{name: name, path: path, col: -1}
	t, okType := parseAttrType(spec.Type)
	if !okType {
		c.errs.add(path+".type", "unknown type %q (S, N, B, BOOL, M, L, SS, NS, BS)", spec.Type)
		return nil
	}
	a.typ = t
	if kt, isKey := c.plan.Table.KeyAttrType(name); isKey {
		// An attribute that is an index key must have the key's type; a
		// NULL or empty value leaves the item out of the index.
		if a.typ != TypeAuto && a.typ != kt {
			c.errs.add(path+".type", "%q is an index key of type %s", name, kt)
			return nil
		}
		a.typ, a.keyType, a.keyLimit = kt, kt, MaxSortKeyBytes
		for _, ix := range c.plan.Table.Indexes {
			if ix.PK.Name == name {
				a.keyLimit = MaxPartitionKeyBytes
			}
		}
	}
	n := 0
	if spec.From != "" {
		n++
	}
	if spec.Template != "" {
		n++
	}
	if spec.Value != nil {
		n++
	}
	if n != 1 {
		c.errs.add(path, "set exactly one of from:, template: or value:")
		return nil
	}
	switch {
	case spec.From != "":
		i, k, found := c.column(path+fromSuffix(spec), ParseColumnName(spec.From))
		if !found {
			return nil
		}
		if col := c.columnOf(ParseColumnName(spec.From)); a.typ == TypeM && col != nil && col.Cast == source.CastWKT {
			// A spatial column as M: GeoJSON, read through its own select
			// expression beside the WKT one.
			i = c.addSpatialJSON(ParseColumnName(spec.From), col)
		} else if (a.typ == TypeSS || a.typ == TypeL) && k == value.String && c.isSetColumn(ParseColumnName(spec.From)) {
			// A MySQL SET arrives as "a,b": its members make the set or list.
			a.setCol = true
		} else if !convertible(k, a.typ) {
			c.errs.add(path, "column %s is %s and cannot be stored as %s", spec.From, k, a.typ)
			return nil
		}
		a.col, a.kind = i, k
		if a.keyType != "" {
			// Index keys are evaluated as templates (sparse rule, key checks).
			ref := ParseColumnName(spec.From)
			a.tmpl = &Template{src: "${" + ref.String() + "}", parts: []tpart{{expr: &Expr{Ref: ref, col: i}}}}
		}
	case spec.Template != "":
		t, k, good := c.template(path+templateSuffix(spec), spec.Template)
		if !good {
			return nil
		}
		if !convertible(k, a.typ) {
			c.errs.add(path, "template %q gives %s values, which cannot be stored as %s", spec.Template, k, a.typ)
			return nil
		}
		a.tmpl, a.kind = t, k
	default:
		a.kind = value.String
		av, err := Convert(value.StringValue(*spec.Value), a.typ)
		if err != nil {
			c.errs.add(path+".value", "%v", err)
			return nil
		}
		a.constant = av
	}
	return a
}

func fromSuffix(s *AttributeSpec) string {
	if s.shorthand {
		return ""
	}
	return ".from"
}

func templateSuffix(s *AttributeSpec) string {
	if s.shorthand {
		return ""
	}
	return ".template"
}

// columnOf is the source column ref names, or nil.
func (c *entityCompiler) columnOf(ref ColumnName) *source.Column {
	t := c.base
	if ref.Alias != "" {
		t = c.joins[ref.Alias]
	}
	if t == nil {
		return nil
	}
	return t.Column(ref.Name)
}

// isSetColumn reports whether the column is a MySQL SET.
func (c *entityCompiler) isSetColumn(ref ColumnName) bool {
	col := c.columnOf(ref)
	return col != nil && strings.HasPrefix(strings.ToLower(col.DBType), "set(")
}

// addSpatialJSON selects a spatial column as GeoJSON (once) and returns
// its position.
func (c *entityCompiler) addSpatialJSON(ref ColumnName, col *source.Column) int {
	key := ColumnName{Alias: ref.Alias, Name: ref.Name + "\x00geojson"}
	if i, ok := c.index[key]; ok {
		return i
	}
	alias := ref.Alias
	if alias == "" {
		alias = c.defaultAlias
	}
	c.cols = append(c.cols, source.ColumnRef{Alias: alias, Name: ref.Name, Cast: source.CastGeoJSON, Kind: value.JSON})
	c.kinds = append(c.kinds, value.JSON)
	c.index[key] = len(c.cols) - 1
	return len(c.cols) - 1
}

// convertible reports whether values of kind k can ever be stored as t.
func convertible(k value.Kind, t AttrType) bool {
	if k == value.Null {
		return true // static validation: kind unknown
	}
	switch t {
	case TypeAuto, TypeS:
		return true
	case TypeN:
		return k != value.Bytes && k != value.List && k != value.JSON
	case TypeB:
		return k == value.Bytes || k == value.String
	case TypeBOOL:
		return k == value.Bool || k == value.Int || k == value.String
	case TypeM, TypeL:
		return k == value.JSON || k == value.String || (t == TypeL && k == value.List)
	case TypeSS, TypeNS:
		return k == value.List || k == value.JSON
	case TypeBS:
		return k == value.List
	}
	return false
}

func (c *entityCompiler) condition(path string, w *Condition) *condPlan {
	if w.Column == "" {
		c.errs.add(path+".column", "missing the column the condition tests")
		return nil
	}
	n := 0
	if w.Equals != nil {
		n++
	}
	if len(w.In) > 0 {
		n++
	}
	if w.NotNull {
		n++
	}
	if w.IsNull {
		n++
	}
	switch {
	case n == 0:
		// equals: null decodes as no equals: at all.
		c.errs.add(path, "set one of equals:, in:, not_null: true or is_null: true (to test for NULL, write is_null: true, not equals: null)")
		return nil
	case n > 1:
		c.errs.add(path, "set exactly one of equals:, in:, not_null: true or is_null: true")
		return nil
	}
	i, _, found := c.column(path+".column", ParseColumnName(w.Column))
	if !found {
		return nil
	}
	cp := &condPlan{col: i, equals: w.Equals, notNull: w.NotNull, isNull: w.IsNull}
	if len(w.In) > 0 {
		cp.in = map[string]bool{}
		for _, v := range w.In {
			cp.in[v] = true
		}
	}
	return cp
}
