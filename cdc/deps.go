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
	b := &graphBuilder{g: &graph{byTable: map[source.TableRef][]*dep{}}, tables: tables, needs: map[source.TableRef]*source.TableNeed{}}
	for _, ep := range plan.Entities {
		if err := b.entity(ep); err != nil {
			return nil, err
		}
	}
	for _, ref := range b.order {
		b.g.needs = append(b.g.needs, *b.needs[ref])
	}
	return b.g, nil
}

// graphBuilder is the graph being built and what sync needs of each
// table, kept in the order the tables are first met.
type graphBuilder struct {
	g      *graph
	tables map[source.TableRef]*source.Table
	needs  map[source.TableRef]*source.TableNeed
	order  []source.TableRef
}

// need is what sync needs of table ref, recorded the first time.
func (b *graphBuilder) need(ref source.TableRef) (*source.TableNeed, error) {
	if n, ok := b.needs[ref]; ok {
		return n, nil
	}
	t := b.tables[ref]
	if t == nil {
		return nil, fmt.Errorf("table %s is not among the introspected tables", ref)
	}
	n := &source.TableNeed{Table: t}
	b.needs[ref] = n
	b.order = append(b.order, ref)
	return n, nil
}

// useColumns adds cols to the columns a change of n's table must carry.
func useColumns(n *source.TableNeed, cols ...string) {
	for _, c := range cols {
		if !slices.Contains(n.Columns, c) {
			n.Columns = append(n.Columns, c)
		}
	}
}

// needOld adds cols, outside the primary key, to the columns whose old
// values a change of n's table must carry.
func needOld(n *source.TableNeed, cols ...string) {
	for _, c := range cols {
		if !slices.Contains(n.Table.PrimaryKey, c) && !slices.Contains(n.OldColumns, c) {
			n.OldColumns = append(n.OldColumns, c)
		}
	}
}

// entity adds the ways ep's tables feed it: its own table, its joins, the
// columns it selects and its nested tables.
func (b *graphBuilder) entity(ep *mapping.EntityPlan) error {
	q := ep.Query
	if q.SQL != "" {
		return fmt.Errorf("entity %s reads a query: (not a table), whose rows sync cannot follow change by change; sync a mapping without it, or give it from: and join:", ep.Name)
	}
	base, err := b.need(q.Base)
	if err != nil {
		return err
	}
	useColumns(base, q.Key...)
	b.g.add(q.Base, &dep{entity: ep, kind: depBase, cols: q.Key})
	aliases := map[string]source.TableRef{}
	for _, j := range q.Joins {
		aliases[j.Alias] = j.Table
		if err := b.join(ep, base, aliases, j); err != nil {
			return err
		}
	}
	for _, c := range q.Columns {
		if c.Alias == "" {
			useColumns(base, c.Name)
		} else if ref, ok := aliases[c.Alias]; ok {
			useColumns(b.needs[ref], c.Name)
		}
	}
	for _, np := range ep.Nests() {
		if err := b.nest(ep, np); err != nil {
			return err
		}
	}
	return nil
}

// join adds a table ep pre-joins; aliases are its joins so far, this one
// included.
func (b *graphBuilder) join(ep *mapping.EntityPlan, base *source.TableNeed, aliases map[string]source.TableRef, j source.Join) error {
	n, err := b.need(j.Table)
	if err != nil {
		return err
	}
	d := &dep{entity: ep, kind: depJoin, alias: j.Alias}
	for _, on := range j.On {
		d.cols = append(d.cols, on.Column)
		d.refs = append(d.refs, source.ColumnRef{Alias: on.RefAlias, Name: on.RefColumn})
		if on.RefAlias == "" {
			useColumns(base, on.RefColumn)
		} else if ref, ok := aliases[on.RefAlias]; ok {
			useColumns(b.needs[ref], on.RefColumn)
		}
	}
	useColumns(n, d.cols...)
	needOld(n, d.cols...)
	b.g.add(j.Table, d)
	return nil
}

// nest adds a table whose rows ep nests.
func (b *graphBuilder) nest(ep *mapping.EntityPlan, np *mapping.NestPlan) error {
	q, nq := ep.Query, np.Query
	child := nq.Joins[len(nq.Joins)-1]
	n, err := b.need(child.Table)
	if err != nil {
		return err
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
		return fmt.Errorf("entity %s: nested %s is not paired on the whole key", ep.Name, np.Name)
	}
	useColumns(n, d.cols...)
	needOld(n, d.cols...)
	for _, c := range nq.Columns {
		if c.Alias == child.Alias {
			useColumns(n, c.Name)
		}
	}
	for i := np.ParentKeyLen; i < len(nq.Key); i++ {
		useColumns(n, nq.Key[i])
	}
	b.g.add(child.Table, d)
	return nil
}

func (g *graph) add(t source.TableRef, d *dep) { g.byTable[t] = append(g.byTable[t], d) }
