package main

import (
	"context"
	"errors"
	"os"

	"github.com/dynafold/dynafold/cdc"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/drivers"
)

// explainSyncStop is asked when sync's mapping does not load against the
// source: if a sync state recorded the tables' shapes, a mapped column or
// table renamed or dropped since is said as the schema change it is,
// with its fix (a rename is undone by renaming back, which a mapping
// error would not say). It returns nil when that explains nothing.
func (a *app) explainSyncStop(ctx context.Context, l *loaded, loadErr error) *cdc.SchemaError {
	if errors.Is(loadErr, context.Canceled) {
		return nil
	}
	statePath := a.syncStatePath(l.static.Table.Name)
	if a.v.GetString("state") == "" {
		if _, err := os.Stat(statePath); err != nil {
			return nil
		}
	}
	state, err := a.openState(ctx, l, statePath, l.static.Table.Name, false)
	if err != nil || state == nil {
		return nil
	}
	defer state.Close()
	dsn, err := l.dsn()
	if err != nil {
		return nil
	}
	src, err := drivers.OpenRetrying(ctx, dsn, drivers.OpenOptions{MaxConns: 2, Attempts: 1, Logger: a.log})
	if err != nil {
		return nil
	}
	defer src.Close()
	sh, ok := src.(source.Shaper)
	if !ok {
		return nil
	}
	stop, err := cdc.StoppedBy(ctx, state, sh)
	if err != nil {
		return nil
	}
	return stop
}
