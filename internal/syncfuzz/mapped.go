package syncfuzz

import (
	"context"
	"fmt"
	"strings"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/drivers"
)

// reads is what the compiled mapping reads from each source table, as
// sync counts a column mapped (cdc's table needs: the select list, the
// keys, both sides of every join, a nested child's columns). The schema
// changes the fuzzer draws depend on it: dropping or renaming a mapped
// column must stop sync, anything done to another column must not, so
// it is read from the compiled plan rather than guessed from the file.
type reads struct {
	// cols: table → the columns the mapping reads.
	cols map[string]map[string]bool
	// filter: table → the columns a where: filter names. They are left
	// alone: the filter is SQL that names them.
	filter map[string]map[string]bool
	// join: table → the columns a join or a nested child pairs on. A
	// default or a rewrite would move every row to one parent, or none.
	join map[string]map[string]bool
	// joined are the tables an entity pre-joins as an ancestor: emptied,
	// their children's items would lose what they copy from them.
	joined map[string]bool
}

func (r *reads) mapped(table, col string) bool   { return r.cols[table][col] }
func (r *reads) filtered(table, col string) bool { return r.filter[table][col] }
func (r *reads) joins(table, col string) bool    { return r.join[table][col] }

// readMapping compiles the design's mapping against the source at dsn, as
// sync does, and collects what it reads.
func readMapping(ctx context.Context, engine, dsn, config string, vars []string) (*reads, error) {
	cfg, err := mapping.Load(config)
	if err != nil {
		return nil, err
	}
	d, err := source.ParseDSN(engine, dsn)
	if err != nil {
		return nil, err
	}
	src, err := drivers.OpenRetrying(ctx, d, drivers.OpenOptions{MaxConns: 2})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	refs, _ := mapping.SourceTables(cfg)
	schema := &mapping.Schema{}
	if schema.Tables, err = src.Introspect(ctx, refs); err != nil {
		return nil, err
	}
	opts := mapping.Options{Vars: map[string]string{}}
	for _, v := range vars {
		k, val, _ := strings.Cut(v, "=")
		opts.Vars[k] = val
	}
	plan, err := mapping.Compile(cfg, schema, opts)
	if err != nil {
		return nil, fmt.Errorf("compiling %s: %w", config, err)
	}
	r := &reads{cols: map[string]map[string]bool{}, filter: map[string]map[string]bool{}, join: map[string]map[string]bool{}, joined: map[string]bool{}}
	for _, ep := range plan.Entities {
		r.entity(ep)
	}
	return r, nil
}

// entity adds what one entity reads, as cdc's graph builder counts it.
func (r *reads) entity(ep *mapping.EntityPlan) {
	q := ep.Query
	if q.SQL != "" {
		return // sync refuses query: entities
	}
	aliases := map[string]string{"": q.Base.Name}
	for _, j := range q.Joins {
		aliases[j.Alias] = j.Table.Name
		r.joined[j.Table.Name] = true
		for _, on := range j.On {
			for _, m := range []map[string]map[string]bool{r.cols, r.join} {
				mark(m, j.Table.Name, on.Column)
				mark(m, aliases[on.RefAlias], on.RefColumn)
			}
		}
	}
	for _, k := range q.Key {
		mark(r.cols, q.Base.Name, k)
	}
	for _, c := range q.Columns {
		if t, ok := aliases[c.Alias]; ok {
			mark(r.cols, t, c.Name)
		}
	}
	for _, w := range q.Where {
		if w.Col != nil {
			if t, ok := aliases[w.Col.Alias]; ok {
				mark(r.filter, t, w.Col.Name)
			}
		}
	}
	for _, np := range ep.Nests() {
		nq := np.Query
		child := nq.Joins[len(nq.Joins)-1]
		for _, on := range child.On {
			mark(r.cols, child.Table.Name, on.Column)
			mark(r.join, child.Table.Name, on.Column)
		}
		for _, c := range nq.Columns {
			if c.Alias == child.Alias {
				mark(r.cols, child.Table.Name, c.Name)
			}
		}
		for i := np.ParentKeyLen; i < len(nq.Key); i++ {
			mark(r.cols, child.Table.Name, nq.Key[i])
		}
		for _, w := range nq.Where {
			if w.Col != nil && w.Col.Alias == child.Alias {
				mark(r.filter, child.Table.Name, w.Col.Name)
			}
		}
	}
}
