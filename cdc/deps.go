package cdc

import (
	"fmt"
	"slices"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
)

// depKind is how a changed row reaches an entity's rows.
type depKind int

const (
	// depBase: the entity reads the table itself; the change's key is the
	// entity row's key.
	depBase depKind = iota
	// depJoin: the entity pre-joins the table as an ancestor; the entity
	// rows whose join columns equal the changed row's are found by query.
	depJoin
	// depNest: the entity nests the table's rows; the changed row's
	// parent-key columns are the entity row's key.
	depNest
)

// dep is one way a table feeds an entity.
type dep struct {
	entity *mapping.EntityPlan
	kind   depKind
	// cols are the changed table's columns whose values select the
	// dependent rows; for depJoin, refs are the entity query's columns
	// they must equal.
	cols []string
	refs []source.ColumnRef
	// alias names the join (depJoin) for messages.
	alias string
}

// graph is, per source table, every dependency of the mapping on it.
type graph struct {
	byTable map[source.TableRef][]*dep
	needs   []source.TableNeed
}

// buildGraph reads the compiled plan. tables holds the introspected
// source tables. A query: entity cannot be followed change by change, so
// it is refused with an error naming it.
func buildGraph(plan *mapping.Plan, tables map[source.TableRef]*source.Table) (*graph, error) {
	g := &graph{byTable: map[source.TableRef][]*dep{}}
	needs := map[source.TableRef]*source.TableNeed{}
	var order []source.TableRef
	need := func(ref source.TableRef) (*source.TableNeed, error) {
		if n, ok := needs[ref]; ok {
			return n, nil
		}
		t := tables[ref]
		if t == nil {
			return nil, fmt.Errorf("table %s is not among the introspected tables", ref)
		}
		n := &source.TableNeed{Table: t}
		needs[ref] = n
		order = append(order, ref)
		return n, nil
	}
	use := func(n *source.TableNeed, cols ...string) {
		for _, c := range cols {
			if !slices.Contains(n.Columns, c) {
				n.Columns = append(n.Columns, c)
			}
		}
	}
	old := func(n *source.TableNeed, cols ...string) {
		for _, c := range cols {
			if !slices.Contains(n.Table.PrimaryKey, c) && !slices.Contains(n.OldColumns, c) {
				n.OldColumns = append(n.OldColumns, c)
			}
		}
	}
	for _, ep := range plan.Entities {
		q := ep.Query
		if q.SQL != "" {
			return nil, fmt.Errorf("entity %s reads a query: (not a table), whose rows sync cannot follow change by change; sync a mapping without it, or give it from: and join:", ep.Name)
		}
		base, err := need(q.Base)
		if err != nil {
			return nil, err
		}
		use(base, q.Key...)
		g.add(q.Base, &dep{entity: ep, kind: depBase, cols: q.Key})
		aliases := map[string]source.TableRef{}
		for _, j := range q.Joins {
			aliases[j.Alias] = j.Table
			n, err := need(j.Table)
			if err != nil {
				return nil, err
			}
			d := &dep{entity: ep, kind: depJoin, alias: j.Alias}
			for _, on := range j.On {
				d.cols = append(d.cols, on.Column)
				d.refs = append(d.refs, source.ColumnRef{Alias: on.RefAlias, Name: on.RefColumn})
				if on.RefAlias == "" {
					use(base, on.RefColumn)
				} else if ref, ok := aliases[on.RefAlias]; ok {
					use(needs[ref], on.RefColumn)
				}
			}
			use(n, d.cols...)
			old(n, d.cols...)
			g.add(j.Table, d)
		}
		for _, c := range q.Columns {
			if c.Alias == "" {
				use(base, c.Name)
			} else if ref, ok := aliases[c.Alias]; ok {
				use(needs[ref], c.Name)
			}
		}
		for _, np := range ep.Nests() {
			nq := np.Query
			child := nq.Joins[len(nq.Joins)-1]
			n, err := need(child.Table)
			if err != nil {
				return nil, err
			}
			d := &dep{entity: ep, kind: depNest, alias: np.Name}
			// The entity key's columns, in key order, paired with the
			// child's columns.
			for _, k := range q.Key {
				for _, on := range child.On {
					if on.RefAlias == "" && on.RefColumn == k {
						d.cols = append(d.cols, on.Column)
					}
				}
			}
			if len(d.cols) != len(q.Key) {
				return nil, fmt.Errorf("entity %s: nested %s is not paired on the whole key", ep.Name, np.Name)
			}
			use(n, d.cols...)
			old(n, d.cols...)
			for _, c := range nq.Columns {
				if c.Alias == child.Alias {
					use(n, c.Name)
				}
			}
			for i := np.ParentKeyLen; i < len(nq.Key); i++ {
				use(n, nq.Key[i])
			}
			g.add(child.Table, d)
		}
	}
	for _, ref := range order {
		g.needs = append(g.needs, *needs[ref])
	}
	return g, nil
}

func (g *graph) add(t source.TableRef, d *dep) { g.byTable[t] = append(g.byTable[t], d) }
