package statestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/internal/durable"
)

// File keeps a sync's state in local files: the state document at its
// path (.dynafold/<table>.sync.json by default), the row index in a bbolt
// file beside it and the initial load's checkpoint in a JSON file beside
// it. The index file's lock is the sync's lock: a second sync of the same
// state fails to open it.
type File struct {
	path  string
	index *rowIndex
	// calls counts file operations (bbolt transactions, file writes), for
	// the conformance suite's cost check.
	calls atomic.Int64
}

var _ Store = (*File)(nil)

// IndexPath is the row index kept beside a sync state file.
func IndexPath(statePath string) string { return trimJSON(statePath) + ".index" }

// LoadPath is the initial load's checkpoint kept beside a sync state file.
func LoadPath(statePath string) string { return trimJSON(statePath) + ".load.json" }

func trimJSON(p string) string { return strings.TrimSuffix(p, ".json") }

// OpenFile opens the state kept at path, creating its directory.
func OpenFile(path string) (*File, error) {
	if err := durable.MkdirAll(filepath.Dir(path)); err != nil {
		return nil, err
	}
	ix, err := openIndex(IndexPath(path))
	if err != nil {
		return nil, err
	}
	return &File{path: path, index: ix}, nil
}

// Path is the state file.
func (f *File) Path() string { return f.path }

// Where implements Store.
func (f *File) Where() string { return f.path }

// IndexPath is the row index file.
func (f *File) IndexPath() string { return IndexPath(f.path) }

// Calls returns how many file operations the store has made.
func (f *File) Calls() int64 { return f.calls.Load() }

// ReadState implements Store.
func (f *File) ReadState(context.Context) ([]byte, error) {
	f.calls.Add(1)
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading sync checkpoint: %w", err)
	}
	return b, nil
}

// WriteState implements Store: the row index is synced first.
func (f *File) WriteState(_ context.Context, doc []byte) error {
	f.calls.Add(2)
	if err := f.index.Sync(); err != nil {
		return fmt.Errorf("syncing the row index: %w", err)
	}
	if err := durable.WriteFile(f.path, doc); err != nil {
		return fmt.Errorf("writing sync checkpoint: %w", err)
	}
	return nil
}

// Keys implements Store.
func (f *File) Keys(_ context.Context, entity string, rows [][]byte) ([][]string, error) {
	f.calls.Add(1)
	out := make([][]string, len(rows))
	err := f.index.view(func(tx *indexTx) error {
		tx.keysOf(entity, rows, out)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the row index: %w", err)
	}
	return out, nil
}

// SetKeys implements Store, in one bbolt transaction.
func (f *File) SetKeys(_ context.Context, entries []Entry) error {
	if len(entries) == 0 {
		return nil
	}
	f.calls.Add(1)
	return f.index.update(func(tx *indexTx) error {
		for _, e := range entries {
			if err := tx.set(e.Entity, e.Row, e.Keys); err != nil {
				return err
			}
		}
		return nil
	})
}

// ClearKeys implements Store.
func (f *File) ClearKeys(context.Context) error {
	f.calls.Add(1)
	return f.index.clear()
}

// Load implements Store.
func (f *File) Load() checkpoint.Store {
	return &syncedLoad{Store: checkpoint.NewFileStore(LoadPath(f.path)), sync: f.index.Sync}
}

// Remove implements Store.
func (f *File) Remove(context.Context) ([]string, error) {
	if err := f.Close(); err != nil {
		return nil, err
	}
	return RemoveFiles(f.path)
}

// RemoveFiles deletes the state file at path and the files beside it,
// without opening them, and says which it removed.
func RemoveFiles(path string) ([]string, error) {
	var removed []string
	for _, p := range []string{path, IndexPath(path), LoadPath(path)} {
		if err := os.Remove(p); err == nil {
			removed = append(removed, "file "+p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return removed, err
		}
	}
	return removed, nil
}

// Close implements Store.
func (f *File) Close() error {
	if f.index == nil {
		return nil
	}
	err := f.index.Close()
	f.index = nil
	return err
}

// syncedLoad makes the row index durable before each save of the load's
// checkpoint, so that a saved shard position never runs ahead of the
// keys its rows recorded.
type syncedLoad struct {
	checkpoint.Store
	sync func() error
}

func (s *syncedLoad) Flush(ctx context.Context) error {
	if err := s.sync(); err != nil {
		return fmt.Errorf("syncing the row index: %w", err)
	}
	return s.Store.Flush(ctx)
}

func (s *syncedLoad) Finish(ctx context.Context) error {
	if err := s.sync(); err != nil {
		return fmt.Errorf("syncing the row index: %w", err)
	}
	return s.Store.Finish(ctx)
}
