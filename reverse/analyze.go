package reverse

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
)

// Analyze decides, for every entity of p and every column of the table it
// reads, whether the row can be rebuilt from the entity's items. schema is
// the source schema p was compiled against: it gives the columns no item
// holds, their types, nullability and defaults. Without it (nil, or a
// table missing from it) only the columns the mapping names are judged,
// and types are unknown, so time precision is assumed to be microseconds.
func Analyze(p *mapping.Plan, schema *mapping.Schema) *Report {
	a := &analyzer{p: p, schema: schema, driver: p.Config.Source.Driver, writers: map[source.TableRef][]string{}}
	for _, ep := range p.Entities {
		if ep.Query.SQL == "" {
			a.writers[ep.Query.Base] = append(a.writers[ep.Query.Base], "entity "+ep.Name)
		}
		for _, np := range ep.Nests() {
			if j := childJoin(np); j != nil {
				a.writers[j.Table] = append(a.writers[j.Table], fmt.Sprintf("entity %s's nested %s", ep.Name, np.Name))
			}
		}
	}
	r := &Report{Reversible: true}
	for _, ep := range p.Entities {
		e := a.entity(ep)
		r.Reversible = r.Reversible && e.Reversible
		r.Entities = append(r.Entities, e)
	}
	a.recognition(r)
	r.lineOf = func(path string) int { return lineOf(p.Config, path) }
	return r
}

type analyzer struct {
	p      *mapping.Plan
	schema *mapping.Schema
	driver string
	// writers names, per table, what writes its rows back.
	writers map[source.TableRef][]string
}

func (a *analyzer) table(ref source.TableRef) *source.Table {
	if a.schema == nil {
		return nil
	}
	return a.schema.Tables[ref]
}

// spec is the entity's mapping entry and its line.
func (a *analyzer) spec(name string) (*mapping.Entity, int) {
	for _, e := range a.p.Config.Entities {
		if e.Key == name {
			return e.Value, e.Line
		}
	}
	return nil, 0
}

func (a *analyzer) entity(ep *mapping.EntityPlan) *Entity {
	spec, line := a.spec(ep.Name)
	e := &Entity{Entity: ep.Name, Path: "entities." + ep.Name, Line: line, Columns: []Column{}}
	if ep.Query.SQL != "" {
		e.Problems = append(e.Problems, Problem{
			Path:   e.Path + ".query",
			Reason: "its items are computed by a query (query:), so there is no table row to write back",
			Fix:    "map the table it reads with from: instead; or leave the entity out of the mapping fail-back runs with, so that its items match no entity and are counted as rejects, never applied",
		})
		e.Notes = append(e.Notes, "recompute these items after a fail-back: a forward migrate of this entity rebuilds them from the rows")
		return e
	}
	e.Table = ep.Query.Base.String()
	rc := &rowContext{a: a, cols: ep.Query.Columns, base: a.table(ep.Query.Base), joins: ep.Query.Joins}
	rc.equal = joinEquality(ep.Query.Joins)
	for _, it := range ep.Items {
		rc.item(e, it)
	}
	cols := rc.verdicts(ep.KeyColumns, nil)
	e.Columns = append(e.Columns, cols...)
	e.Derived = rc.derived
	if ch := a.p.Changes[ep.Query.Base]; ch != nil && ch.Deleted != "" {
		e.Notes = append(e.Notes, fmt.Sprintf("changes: marks soft deletes in %s: such rows make no item, so in the table a soft delete and a delete look alike, and a removed item deletes its row", ch.Deleted))
	}
	if spec != nil && spec.Where != "" {
		e.Notes = append(e.Notes, "where: filters the rows it reads; a row fail-back writes that the filter leaves out no longer migrates forward")
	}
	if len(ep.Items) > 1 {
		names := make([]string, len(ep.Items))
		for i, it := range ep.Items {
			names[i] = it.Name
		}
		e.Notes = append(e.Notes, fmt.Sprintf("a row is %d items (%s); each holds the key, and an item's change upserts the columns it holds", len(ep.Items), strings.Join(names, ", ")))
	}
	for _, it := range ep.Items {
		if it.HasTTL() {
			e.Notes = append(e.Notes, "its items expire (ttl:): DynamoDB's deletes of expired items reach the stream as removes by the TTL service, and would delete their rows")
			break
		}
	}
	for _, np := range ep.Nests() {
		n := a.nested(e, np)
		e.Nested = append(e.Nested, n)
	}
	e.Reversible = entityOK(e)
	return e
}

func entityOK(e *Entity) bool {
	if len(e.Problems) > 0 {
		return false
	}
	for _, c := range e.Columns {
		if c.Status == Irreversible {
			return false
		}
	}
	for _, n := range e.Nested {
		if !n.Reversible {
			return false
		}
	}
	return true
}

// joinEquality maps each "alias.column" of a join's on: pairing to the
// column of the entity's own table it equals, following chains of joins.
func joinEquality(joins []source.Join) map[string]string {
	eq := map[string]string{}
	for _, j := range joins {
		for _, on := range j.On {
			ref := on.RefColumn
			if on.RefAlias != "" {
				var ok bool
				if ref, ok = eq[on.RefAlias+"."+on.RefColumn]; !ok {
					continue
				}
			}
			eq[j.Alias+"."+on.Column] = ref
		}
	}
	return eq
}

// childJoin is the join of a nest's query that reads the child table:
// the last one, which Compile adds after the parent's.
func childJoin(np *mapping.NestPlan) *source.Join {
	if n := len(np.Query.Joins); n > 0 {
		return &np.Query.Joins[n-1]
	}
	return nil
}

// recognition says how each entity's items are told apart, and refuses
// entities whose items cannot be.
func (a *analyzer) recognition(r *Report) {
	tbl := a.p.Table
	type shape struct {
		entity, item, typ, pk, sk string
	}
	var shapes []shape
	for _, ep := range a.p.Entities {
		for _, it := range ep.Items {
			s := shape{entity: ep.Name, item: it.Name, typ: it.Type, pk: it.PK.Prefix()}
			if it.SK != nil {
				s.sk = it.SK.Prefix()
			}
			shapes = append(shapes, s)
		}
	}
	for _, e := range r.Entities {
		if e.Table == "" {
			continue
		}
		var mine []shape
		for _, s := range shapes {
			if s.entity == e.Entity {
				mine = append(mine, s)
			}
		}
		var ways []string
		for _, s := range mine {
			if tbl.TypeAttribute != "" {
				ways = append(ways, fmt.Sprintf("%s = %q", tbl.TypeAttribute, s.typ))
			} else {
				ways = append(ways, fmt.Sprintf("key prefixes %s %q, %s %q", tbl.PK.Name, s.pk, skName(tbl), s.sk))
			}
			for _, o := range shapes {
				if o.entity == e.Entity {
					continue
				}
				clash := o.typ == s.typ
				if tbl.TypeAttribute == "" {
					clash = prefixRelated(o.pk, s.pk) && prefixRelated(o.sk, s.sk)
				}
				if !clash {
					continue
				}
				p := Problem{Path: e.Path, Reason: fmt.Sprintf("its items cannot be told from entity %s's: both have %s", o.entity, strings.TrimPrefix(ways[len(ways)-1], "key prefixes "))}
				if tbl.TypeAttribute != "" {
					p.Fix = fmt.Sprintf("give one of them its own type: (entities.%s.type)", e.Entity)
				} else {
					p.Fix = "set target.type_attribute, so that every item names its entity, or give their keys distinct literal prefixes"
				}
				if !slices.Contains(e.Problems, p) {
					e.Problems = append(e.Problems, p)
				}
				e.Reversible, r.Reversible = false, false
			}
		}
		e.RecognizedBy = strings.Join(slices.Compact(ways), "; ")
	}
}

func skName(t *mapping.TableSchema) string {
	if t.SK == nil {
		return "(no sort key)"
	}
	return t.SK.Name
}

// prefixRelated: one literal prefix starts the other, so a key with one
// could have been made by either template.
func prefixRelated(a, b string) bool {
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}
