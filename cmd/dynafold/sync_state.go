package main

import (
	"context"

	"github.com/dynafold/dynafold/statestore"
)

// openSyncState opens where sync keeps its state: the local files at
// statePath.
func (a *app) openSyncState(_ context.Context, _ *loaded, statePath string) (statestore.Store, error) {
	return statestore.OpenFile(statePath)
}

// removeSyncState deletes sync's state and says what it removed.
func (a *app) removeSyncState(_ context.Context, _ *loaded, statePath string) ([]string, error) {
	return statestore.RemoveFiles(statePath)
}
