package cdc

import (
	"context"
	"fmt"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/statestore"
	"github.com/dynafold/dynafold/value"
)

// dropVanished deletes the items of the rows of ep that the row index
// records and that ep's base table, as snap reads it, no longer has: rows
// that left without row events (TRUNCATE, a partition detached, a table
// replaced). The sweep that follows a re-derive cannot find all of them:
// it spares the items of an entity with a where: filter in collections no
// row of the filter makes, since they may be another tenant's, written
// by another sync; the row index knows which ones this sync wrote. The
// rows are deleted as a round deletes a row that is gone (their recorded
// keys, then the index entries), before the entity is re-derived, so that
// a row of the table as it is now that puts one of those keys again puts
// it after the delete.
//
// It holds the encoded key of every row of the base table in memory: the
// tables it runs for lost their rows, or the part of them a partition
// held.
func (e *engine) dropVanished(ctx context.Context, snap source.Snapshot, ep *mapping.EntityPlan) error {
	lister, ok := e.store.(statestore.RowLister)
	if !ok {
		return fmt.Errorf("rows left the table without row events, and the row index in %s cannot list the rows it holds", e.store.Where())
	}
	kq := keyQuery(ep.Query)
	pageSize := e.opts.Load.PageSize
	if pageSize <= 0 {
		pageSize = pipeline.DefaultPageSize
	}
	present := map[string]struct{}{}
	err := snap.Read(ctx, kq, source.Full, nil, pageSize, func(row value.Row) error {
		present[string(lister.RowName(rowKey(row[:len(kq.Key)])))] = struct{}{}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing the keys of %s: %w", ep.Query.Base, err)
	}
	var gone []*derived
	var dropped int64
	flush := func() error {
		if len(gone) == 0 {
			return nil
		}
		r := &round{e: e}
		if err := r.write(ctx, gone); err != nil {
			return err
		}
		dropped += int64(len(gone))
		r.counts.RowsDerived = int64(len(gone))
		e.run.add(r.counts)
		e.state.Totals.add(r.counts)
		e.metrics.Applied(0, 0, 0, r.counts.ItemsDeleted)
		e.health.Beat()
		gone = gone[:0]
		return nil
	}
	err = lister.ListRows(ctx, ep.Name, func(row []byte, keys []string) error {
		if _, ok := present[string(row)]; ok {
			return nil
		}
		gone = append(gone, &derived{entity: ep, key: row, old: keys})
		if len(gone) >= writeSlice {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return fmt.Errorf("deleting the items of rows that left %s: %w", ep.Query.Base, err)
	}
	if dropped > 0 {
		e.log.Info("deleted the items of rows that left the table without row events", "entity", ep.Name, "table", ep.Query.Base.String(), "rows", dropped)
	}
	return nil
}
