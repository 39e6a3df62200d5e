package cdc

import (
	"context"
	"fmt"
	"slices"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// rederiveRows is how many rows one re-derive round takes: the keys are
// listed from a snapshot and handed to rounds of this many, so that a
// table of millions of rows costs the memory of a round.
const rederiveRows = 20_000

// rederiveTables derives again, from the source as it is now, every row of
// every entity that reads one of tables (as its own table, a pre-joined
// ancestor or a nested child): the values of those tables changed without
// row events (a column dropped and added with a default, a rewrite, a
// truncation). It is a round like any other, only its rows are all the
// entity's rows, listed by key from a snapshot of the base table (every
// row, the ones the entity's filter leaves out too, so that a row the
// change took out of the filter loses its items). Items of rows that left
// the table without row events (TRUNCATE, a partition detached) are found,
// when sweep is set, first in the row index (dropVanished: the rows sync
// wrote items for), then by the sweep: the table's keys against the keys
// the source makes, as a resnapshot ends.
func (e *engine) rederiveTables(ctx context.Context, tables []source.TableRef, sweep bool) ([]string, int64, error) {
	eps := e.readersOf(tables)
	names := make([]string, len(eps))
	for i, ep := range eps {
		names[i] = ep.Name
	}
	e.log.Warn("re-deriving the entities that read the changed tables from the source as it is now", "tables", fmt.Sprint(tables), "entities", names, "sweep", sweep)
	// The items written now carry the source's state as it is now, past
	// any position the stream has reached.
	e.live.writing("")
	snap, err := e.job.Snapshot(ctx, "")
	if err != nil {
		return names, 0, err
	}
	defer snap.Close()
	rd, err := e.job.Reader.Current(ctx, nil)
	if err != nil {
		return names, 0, fmt.Errorf("reading the source: %w", err)
	}
	defer rd.Close()
	var rows int64
	for _, ep := range eps {
		if sweep && e.readsAsBase(ep, tables) {
			if err := e.dropVanished(ctx, snap, ep); err != nil {
				return names, rows, fmt.Errorf("entity %s: %w", ep.Name, err)
			}
		}
		kq := keyQuery(ep.Query)
		aff := affected{}
		n := 0
		flush := func() error {
			if n == 0 {
				return nil
			}
			r := &round{e: e}
			if err := r.rederive(ctx, rd, aff); err != nil {
				return err
			}
			rows += r.counts.RowsDerived
			e.run.add(r.counts)
			e.state.Totals.add(r.counts)
			e.metrics.Applied(0, 0, r.counts.ItemsWritten, r.counts.ItemsDeleted)
			aff, n = affected{}, 0
			e.health.Beat()
			return nil
		}
		pageSize := e.opts.Load.PageSize
		if pageSize <= 0 {
			pageSize = pipeline.DefaultPageSize
		}
		err := snap.Read(ctx, kq, source.Full, nil, pageSize, func(row value.Row) error {
			aff.add(ep, row[:len(kq.Key)])
			if n++; n >= rederiveRows {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err != nil {
			return names, rows, fmt.Errorf("entity %s: %w", ep.Name, err)
		}
	}
	if sweep {
		if e.job.Prune == nil {
			return names, rows, fmt.Errorf("rows left %v without row events, and this sync has no sweep to delete their items", tables)
		}
		deleted, err := e.job.Prune(ctx)
		if err != nil {
			return names, rows, fmt.Errorf("deleting the items no source row produces: %w", err)
		}
		e.run.ItemsDeleted += deleted
		e.state.Totals.ItemsDeleted += deleted
		e.metrics.Applied(0, 0, 0, deleted)
	}
	e.log.Info("re-derive done", "entities", names, "rows", rows)
	return names, rows, nil
}

// readersOf is the entities that read any of tables, in plan order.
func (e *engine) readersOf(tables []source.TableRef) []*mapping.EntityPlan {
	var out []*mapping.EntityPlan
	for _, ep := range e.plan.Entities {
		for _, t := range tables {
			if slices.ContainsFunc(e.graph.byTable[t], func(d *dep) bool { return d.entity == ep }) && !slices.Contains(out, ep) {
				out = append(out, ep)
			}
		}
	}
	return out
}

// keyQuery reads only the key of every row of q's base table: no joins,
// no filter.
func keyQuery(q *source.Query) *source.Query {
	return &source.Query{Base: q.Base, Key: q.Key, KeyKinds: q.KeyKinds, Columns: slices.Clone(q.Columns[:len(q.Key)])}
}

// readsAsBase reports whether ep reads one of tables as its own (base)
// table, rather than as a pre-joined ancestor or a nested child.
func (e *engine) readsAsBase(ep *mapping.EntityPlan, tables []source.TableRef) bool {
	for _, t := range tables {
		if slices.ContainsFunc(e.graph.byTable[t], func(d *dep) bool { return d.entity == ep && d.kind == depBase }) {
			return true
		}
	}
	return false
}
