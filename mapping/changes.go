package mapping

import (
	"fmt"
	"strings"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Incremental runs re-derive only the rows that changed since a watermark.
// The mapping's `changes:` block names, per source table, the column that
// records a row's last change and an optional soft-delete column. The
// compiled plan knows which tables feed each entity (its own table, joined
// ancestors, nested children), so it can narrow every entity's query to the
// rows whose own row, ancestor or child changed.

// ChangeColumns are one table's change-tracking columns.
type ChangeColumns struct {
	Table source.TableRef
	// Column is the timestamp column set on every insert and update.
	Column string
	// Deleted, when set, is the soft-delete column: a row where it is not
	// NULL makes no item.
	Deleted string
}

// DepKind is how a table feeds an entity.
type DepKind string

// The dependency kinds.
const (
	DepOwn  DepKind = "own"
	DepJoin DepKind = "join"
	DepNest DepKind = "nest"
)

// Dependency is one table an entity's items are built from.
type Dependency struct {
	Kind DepKind
	// Alias is the join alias (DepJoin) or the nested attribute (DepNest).
	Alias string
	Table source.TableRef
	// Changes is nil when the mapping declares no change column for the
	// table.
	Changes *ChangeColumns
	// on pairs the nested child's columns with the entity's key columns.
	on []source.JoinOn
}

// changedAlias is the alias of a nested child table inside the EXISTS
// subquery that finds parents of changed children; it is a plain lower-case
// identifier, the same quoted or not in every engine.
const changedAlias = "dynafold_changed"

// compileChanges checks `changes:` and resolves its tables. Every table must
// be read by the mapping; with the schema, the columns must exist and the
// change column must be a timestamp or date.
func compileChanges(cfg *Config, schema *Schema, errs *Errors) map[source.TableRef]*ChangeColumns {
	if len(cfg.Changes) == 0 {
		return nil
	}
	tables, _ := SourceTables(cfg)
	read := map[source.TableRef]bool{}
	var names []string
	for _, t := range tables {
		read[t] = true
		names = append(names, t.String())
	}
	out := map[source.TableRef]*ChangeColumns{}
	for _, e := range cfg.Changes {
		path := "changes." + e.Key
		spec := e.Value
		if spec == nil {
			errs.add(path, "name the column that records each row's last change, e.g. {column: updated_at}")
			continue
		}
		ref := source.ParseTableRef(e.Key)
		if ref.Schema == "" {
			ref.Schema = cfg.Source.Schema
		}
		if !read[ref] {
			errs.add(path, "table %q is not read by any entity, join or nest (the mapping reads %s)", e.Key, strings.Join(names, ", "))
			continue
		}
		if spec.Column == "" {
			errs.add(path+".column", "name the column that records each row's last change, e.g. updated_at")
			continue
		}
		if spec.Deleted != "" && spec.Deleted == spec.Column {
			errs.add(path+".deleted", "the soft-delete column must differ from the change column %q", spec.Column)
			continue
		}
		if schema != nil {
			t := schema.Tables[ref]
			if t == nil {
				errs.add(path, "table %q does not exist in the source", ref)
				continue
			}
			col := t.Column(spec.Column)
			if col == nil {
				errs.add(path+".column", "unknown column %q in table %s", spec.Column, ref)
				continue
			}
			if col.Kind != value.Timestamp && col.Kind != value.Date {
				typ := col.DBType
				if typ == "" {
					typ = col.Kind.String()
				}
				errs.add(path+".column", "column %q of table %s is %s, not a timestamp; incremental runs compare it with a time watermark", spec.Column, ref, typ)
				continue
			}
			if spec.Deleted != "" && t.Column(spec.Deleted) == nil {
				errs.add(path+".deleted", "unknown column %q in table %s", spec.Deleted, ref)
				continue
			}
		}
		out[ref] = &ChangeColumns{Table: ref, Column: spec.Column, Deleted: spec.Deleted}
	}
	return out
}

// andWhere returns a new filter: (where) AND (extra), or extra alone.
func andWhere(where []source.WherePart, extra ...source.WherePart) []source.WherePart {
	if len(where) == 0 {
		return append([]source.WherePart{}, extra...)
	}
	out := make([]source.WherePart, 0, len(where)+len(extra)+3)
	out = append(out, source.WherePart{SQL: "("})
	out = append(out, where...)
	out = append(out, source.WherePart{SQL: ") AND ("})
	out = append(out, extra...)
	return append(out, source.WherePart{SQL: ")"})
}

func colPart(alias, name string) source.WherePart {
	return source.WherePart{Col: &source.ColumnRef{Alias: alias, Name: name}}
}

// notDeleted is the filter that hides soft-deleted rows.
func notDeleted(alias, col string) []source.WherePart {
	return []source.WherePart{colPart(alias, col), {SQL: " IS NULL"}}
}

// Dependencies lists the tables the entity's items are built from: its own
// table, each joined ancestor and each nested child, with their change
// columns. A query: entity has no own table.
func (e *EntityPlan) Dependencies() []Dependency { return e.deps }

// Incremental says whether an incremental run can narrow the entity to its
// changed rows, and when it cannot, why (such an entity is re-derived in
// full on every incremental run).
func (e *EntityPlan) Incremental() (ok bool, reason string) {
	if e.Query.SQL != "" {
		return false, "it reads a query:, whose rows cannot be traced to changed tables"
	}
	for _, d := range e.deps {
		if d.Changes == nil {
			switch d.Kind {
			case DepJoin:
				return false, fmt.Sprintf("joined table %s (join %s) has no change column in changes:", d.Table, d.Alias)
			case DepNest:
				return false, fmt.Sprintf("nested table %s (nest %s) has no change column in changes:", d.Table, d.Alias)
			default:
				return false, fmt.Sprintf("its table %s has no change column in changes:", d.Table)
			}
		}
	}
	return true, ""
}

// recordDeps fills ep.deps once the entity and its nests are compiled.
func (c *entityCompiler) recordDeps(ep *EntityPlan) {
	q := ep.Query
	ch := c.plan.Changes
	if q.SQL == "" {
		ep.deps = append(ep.deps, Dependency{Kind: DepOwn, Table: q.Base, Changes: ch[q.Base]})
	}
	for _, j := range q.Joins {
		ep.deps = append(ep.deps, Dependency{Kind: DepJoin, Alias: j.Alias, Table: j.Table, Changes: ch[j.Table]})
	}
	for _, np := range ep.nests {
		child := np.Query.Joins[len(np.Query.Joins)-1]
		ep.deps = append(ep.deps, Dependency{Kind: DepNest, Alias: np.Name, Table: child.Table, Changes: ch[child.Table], on: child.On})
	}
}

// Since is, per table, the change-column value (as the source prints it)
// past which a row counts as changed.
type Since map[source.TableRef]string

// changedFilter is the condition that selects the entity's rows whose own
// row, joined ancestor or nested child changed after since; ok is false
// when the entity must be read in full.
func (e *EntityPlan) changedFilter(since Since) (parts []source.WherePart, ok bool) {
	if ok, _ := e.Incremental(); !ok {
		return nil, false
	}
	for _, d := range e.deps {
		w, have := since[d.Table]
		if !have {
			// No watermark: the table was empty at the last run, so every
			// row of it is new.
			return nil, false
		}
		arg := w
		if len(parts) > 0 {
			parts = append(parts, source.WherePart{SQL: " OR "})
		}
		switch d.Kind {
		case DepOwn:
			parts = append(parts, colPart("", d.Changes.Column), source.WherePart{SQL: " > "}, source.WherePart{Arg: &arg})
		case DepJoin:
			parts = append(parts, colPart(d.Alias, d.Changes.Column), source.WherePart{SQL: " > "}, source.WherePart{Arg: &arg})
		case DepNest:
			table := d.Table
			parts = append(parts, source.WherePart{SQL: "EXISTS (SELECT 1 FROM "}, source.WherePart{Table: &table},
				source.WherePart{SQL: " AS " + changedAlias + " WHERE "})
			for _, on := range d.on {
				parts = append(parts, colPart(changedAlias, on.Column), source.WherePart{SQL: " = "}, colPart(on.RefAlias, on.RefColumn),
					source.WherePart{SQL: " AND "})
			}
			parts = append(parts, colPart(changedAlias, d.Changes.Column), source.WherePart{SQL: " > "}, source.WherePart{Arg: &arg},
				source.WherePart{SQL: ")"})
		}
	}
	return parts, len(parts) > 0
}

// Changed returns a plan that reads, of every entity an incremental run
// can serve, only the rows whose own row, joined ancestor or nested child
// changed after since; other entities are read in full. full lists those.
func (p *Plan) Changed(since Since) (narrowed *Plan, full []string) {
	out := *p
	out.Entities = nil
	for _, ep := range p.Entities {
		cond, ok := ep.changedFilter(since)
		if !ok {
			out.Entities = append(out.Entities, ep)
			full = append(full, ep.Name)
			continue
		}
		cp := *ep
		q := *ep.Query
		q.Where = andWhere(q.Where, cond...)
		cp.Query = &q
		cp.nests = nil
		for _, np := range ep.nests {
			n := *np
			nq := *np.Query
			nq.Where = andWhere(nq.Where, cond...)
			n.Query = &nq
			cp.nests = append(cp.nests, &n)
		}
		out.Entities = append(out.Entities, &cp)
	}
	return &out, full
}

// SoftDeleted returns a plan that reads, of every entity whose own table
// has a soft-delete column, the soft-deleted rows whose change column moved
// after since (nil when there are none): their items are the ones to
// delete. Nested rows are not read; they do not change an item's key.
func (p *Plan) SoftDeleted(since Since) *Plan {
	out := *p
	out.Entities = nil
	for _, ep := range p.Entities {
		if ep.Query.SQL != "" || len(ep.deps) == 0 || ep.deps[0].Changes == nil || ep.deps[0].Changes.Deleted == "" {
			continue
		}
		ch := ep.deps[0].Changes
		cond := []source.WherePart{colPart("", ch.Deleted), {SQL: " IS NOT NULL"}}
		if w, ok := since[ch.Table]; ok {
			arg := w
			cond = append(cond, source.WherePart{SQL: " AND "}, colPart("", ch.Column), source.WherePart{SQL: " > "}, source.WherePart{Arg: &arg})
		}
		cp := *ep
		q := *ep.Query
		q.Where = andWhere(ep.userWhere, cond...)
		cp.Query = &q
		cp.nests = nil
		out.Entities = append(out.Entities, &cp)
	}
	if len(out.Entities) == 0 {
		return nil
	}
	return &out
}
