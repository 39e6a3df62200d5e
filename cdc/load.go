package cdc

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/metrics"
	"github.com/dynafold/dynafold/pipeline"
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
	_ = os.Remove(LoadPath(e.job.StatePath))
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
	if err := os.Remove(LoadPath(e.job.StatePath)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := e.index.clear(); err != nil {
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
	opts.OnBuilt = func(rows []pipeline.BuiltRow) error {
		return e.index.update(func(tx *indexTx) error {
			for _, r := range rows {
				k := rowKey(r.Key)
				keys := tx.keys(r.Entity.Name, k)
				n := len(keys)
				for i := range r.Items {
					if !containsString(keys, r.Items[i].Key) {
						keys = append(keys, r.Items[i].Key)
					}
				}
				if len(keys) != n {
					if err := tx.set(r.Entity.Name, k, keys); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	store := &indexedStore{Store: checkpoint.NewFileStore(LoadPath(e.job.StatePath)), index: e.index, health: e.health}
	return pipeline.Run(ctx, pipeline.Job{
		Plan: e.plan, Snapshot: snap, Sink: e.writer, Store: store, Force: e.opts.Force,
		Meta: checkpoint.Meta{Fingerprint: e.job.Fingerprint, Table: e.plan.Table.Name, Source: e.job.Identity, RunID: e.job.RunID},
	}, opts)
}

// indexedStore makes the row index durable before each save of the load's
// checkpoint. The pipeline's loop saves it every --checkpoint-every, which
// is also the load's heartbeat for liveness.
type indexedStore struct {
	checkpoint.Store
	index  *rowIndex
	health *metrics.Health
}

func (s *indexedStore) Flush(ctx context.Context) error {
	s.health.Beat()
	if err := s.index.Sync(); err != nil {
		return err
	}
	return s.Store.Flush(ctx)
}

func (s *indexedStore) Finish(ctx context.Context) error {
	if err := s.index.Sync(); err != nil {
		return err
	}
	return s.Store.Finish(ctx)
}
