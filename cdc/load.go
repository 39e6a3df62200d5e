package cdc

import (
	"context"
	"errors"
	"fmt"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/metrics"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/statestore"
)

// loadPhase runs the initial load (resuming its checkpoint when it runs
// again after a fault) and, after a resnapshot, deletes the items no
// source row produces; then sync streams.
func (e *engine) loadPhase(ctx context.Context, snapshotID string, sum *Summary) error {
	st := e.state
	if st.Resnapshot {
		e.setState(metrics.StateResnapshot)
	} else {
		e.setState(metrics.StateLoading)
	}
	e.health.SetReady(false, "the initial load is under way")
	e.metrics.SetConnected(true)
	load, err := e.load(ctx, snapshotID)
	if load != nil {
		sum.Load = load
		e.run.LoadedItems += load.Total.ItemsWritten
		e.metrics.Loaded(load.Total.ItemsWritten)
	}
	if err != nil {
		// The load's writers may have been cut off after the grace.
		e.abandoned.Store(errors.Is(err, pipeline.ErrInterrupted))
		return err
	}
	e.recovered(metrics.StateLoading)
	if st.Resnapshot {
		if e.job.Prune == nil {
			return errors.New("a resnapshot needs a prune of the table, and this sync has none")
		}
		deleted, err := e.job.Prune(ctx)
		if err != nil {
			return fmt.Errorf("deleting the items no source row produces, after the resnapshot's load: %w", err)
		}
		e.log.Info("resnapshot complete: the table is loaded again and the items no source row produces are deleted", "deleted", deleted)
		e.run.ItemsDeleted += deleted
		st.Totals.ItemsDeleted += deleted
		st.Resnapshot = false
	}
	st.Phase = phaseStream
	if err := e.save(); err != nil {
		return err
	}
	if err := e.store.Load().Discard(ctx); err != nil {
		e.log.Warn("removing the initial load's checkpoint failed", "error", err)
	}
	e.log.Info("initial load complete; streaming changes", "from", st.Confirmed)
	return nil
}

// resnapshot starts over from a reset source: what the lost position left
// on the server is dropped, the load's checkpoint and the row index are
// forgotten, and the state records that the next load is a resnapshot,
// so that a sync killed in the middle of it resumes it, prune included.
func (e *engine) resnapshot(ctx context.Context, reset *SourceResetError) error {
	e.setState(metrics.StateResnapshot)
	e.health.SetReady(false, "resnapshot: the source was reset and the table is loaded again")
	e.log.Warn("the source was reset; resnapshot: a new slot or binlog position, the initial load again, then the items no source row produces are deleted",
		"what", reset.What)
	if err := e.job.Changes.Reset(ctx); err != nil {
		return err
	}
	if err := e.store.Load().Discard(ctx); err != nil {
		return err
	}
	if err := e.store.ClearKeys(ctx); err != nil {
		return fmt.Errorf("clearing the row index: %w", err)
	}
	st := e.state
	st.Phase, st.Start, st.Confirmed, st.Server = "", "", "", ""
	st.Resnapshot = true
	st.Resnapshots++
	return e.save()
}

// load runs the initial load through the migrate pipeline, recording each
// row's item keys in the row index before its items are written.
func (e *engine) load(ctx context.Context, snapshotID string) (*pipeline.Summary, error) {
	snap, err := e.job.Snapshot(ctx, snapshotID)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	opts := e.opts.Load
	opts.Stop = e.opts.Stop
	opts.Logger = e.log
	opts.OnBuilt = func(rows []pipeline.BuiltRow) error { return e.recordLoaded(ctx, rows) }
	store := &beatingStore{Store: e.store.Load(), health: e.health}
	return pipeline.Run(ctx, pipeline.Job{
		Plan: e.plan, Snapshot: snap, Sink: e.writer, Store: store, Force: e.opts.Force,
		Meta: checkpoint.Meta{Fingerprint: e.job.Fingerprint, Table: e.plan.Table.Name, Source: e.job.Identity, RunID: e.job.RunID},
	}, opts)
}

// recordLoaded adds the keys of the items built rows will write to their
// rows' entries in the row index, before the items are written. Rows come
// per entity as the pipeline built them; the store is asked once per
// entity.
func (e *engine) recordLoaded(ctx context.Context, rows []pipeline.BuiltRow) error {
	byEntity := map[string][]int{}
	var order []string
	for i, r := range rows {
		name := r.Entity.Name
		if _, ok := byEntity[name]; !ok {
			order = append(order, name)
		}
		byEntity[name] = append(byEntity[name], i)
	}
	var set []statestore.Entry
	for _, name := range order {
		idx := byEntity[name]
		keys := make([][]byte, len(idx))
		for j, i := range idx {
			keys[j] = rowKey(rows[i].Key)
		}
		have, err := e.store.Keys(ctx, name, keys)
		if err != nil {
			return err
		}
		// A row may come twice in one call; the later sees the earlier.
		seen := map[string]int{}
		for j, i := range idx {
			cur := have[j]
			if at, ok := seen[string(keys[j])]; ok {
				cur = set[at].Keys
			}
			n := len(cur)
			for k := range rows[i].Items {
				if !containsString(cur, rows[i].Items[k].Key) {
					cur = append(cur, rows[i].Items[k].Key)
				}
			}
			if len(cur) == n {
				continue
			}
			if at, ok := seen[string(keys[j])]; ok {
				set[at].Keys = cur
				continue
			}
			seen[string(keys[j])] = len(set)
			set = append(set, statestore.Entry{Entity: name, Row: keys[j], Keys: cur})
		}
	}
	return e.store.SetKeys(ctx, set)
}

// beatingStore beats liveness on each save of the load's checkpoint: the
// pipeline's loop saves it every --checkpoint-every.
type beatingStore struct {
	checkpoint.Store
	health *metrics.Health
}

func (s *beatingStore) Flush(ctx context.Context) error {
	s.health.Beat()
	return s.Store.Flush(ctx)
}
