package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/dynafold/dynafold/internal/durable"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// fileVersion is the checkpoint file format; bump it on incompatible change.
const fileVersion = 1

// document is the checkpoint file's content.
type document struct {
	Version  int       `json:"version"`
	Meta     Meta      `json:"meta"`
	Started  time.Time `json:"started"`
	Updated  time.Time `json:"updated"`
	Complete bool      `json:"complete"`
	Shards   []*Shard  `json:"shards"`
	// Sink is the state of a sink whose durable output must agree with
	// the positions (the files of an export), saved in the same write.
	Sink json.RawMessage `json:"sink,omitempty"`
}

// FileStore keeps the checkpoint in one JSON file, replaced atomically
// (durable.WriteFile: a temporary file, fsynced, renamed over the old one,
// the directory fsynced), so a crash at any instant leaves either the old
// or the new checkpoint, never a torn one. The file is 0600 in a 0700
// directory: its positions are source keys.
type FileStore struct {
	path string
	mu   sync.Mutex
	doc  document
	next int // index of the next shard Claim considers
	now  func() time.Time
	// saved is what Open found in the file, for announcing the run.
	saved *Saved
	// attached, if set, gives the sink state to save with each Flush.
	attached func() (state json.RawMessage, release func())
	// blob, if set, keeps the document instead of the file at path.
	blob Blob
}

// Blob keeps a checkpoint document somewhere other than a local file (an
// item of the sync state table). Read returns nil when there is none;
// Write replaces it durably.
type Blob interface {
	Read(ctx context.Context) ([]byte, error)
	Write(ctx context.Context, doc []byte) error
	Delete(ctx context.Context) error
}

// NewBlobStore returns a store whose document blob keeps; name is how
// messages call it.
func NewBlobStore(blob Blob, name string) *FileStore {
	return &FileStore{path: name, blob: blob, now: time.Now}
}

// Attach makes every Flush save, with the positions, the state that
// snapshot returns. snapshot holds the sink's state still until release is
// called, and the positions are taken in between: what the sink reports
// durable and the positions saved with it are consistent. A sink that
// acknowledges items while holding that same lock keeps its lock order
// (sink, then store) the same as Flush's.
func (f *FileStore) Attach(snapshot func() (state json.RawMessage, release func())) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attached = snapshot
}

// SinkState returns the sink state of the run Open resumed (nil for a new
// run).
func (f *FileStore) SinkState() json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.doc.Sink
}

// Saved describes the run a checkpoint file held when Open read it.
type Saved struct {
	Meta     Meta
	Complete bool
	Started  time.Time
	Updated  time.Time
	// Rows is rows acknowledged over every run of it.
	Rows int64
	// Sink is the sink state saved with it (the files of an export).
	Sink json.RawMessage
}

// Saved returns what the checkpoint file held when Open read it, or nil
// when there was none.
func (f *FileStore) Saved() *Saved {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.saved
}

var _ Store = (*FileStore)(nil)

// NewFileStore returns a store backed by path.
func NewFileStore(path string) *FileStore {
	return &FileStore{path: path, now: time.Now}
}

// NewMemoryStore returns a store that keeps positions only in memory, for
// dry runs, verify and diff, which must never touch a checkpoint file.
func NewMemoryStore() *FileStore {
	return &FileStore{now: time.Now}
}

// Path returns the checkpoint file's path.
func (f *FileStore) Path() string { return f.path }

// load reads the checkpoint file; nil without error when there is none.
func (f *FileStore) load(ctx context.Context) (*document, error) {
	if f.path == "" {
		return nil, nil
	}
	var data []byte
	var err error
	if f.blob != nil {
		data, err = f.blob.Read(ctx)
		if data == nil && err == nil {
			return nil, nil
		}
	} else {
		data, err = os.ReadFile(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint %s: %w", f.path, err)
	}
	var doc document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("checkpoint %s is corrupt: %w", f.path, err)
	}
	if doc.Version != fileVersion {
		return nil, fmt.Errorf("checkpoint %s has format version %d; this dynafold reads version %d", f.path, doc.Version, fileVersion)
	}
	return &doc, nil
}

// Open implements Store.
func (f *FileStore) Open(ctx context.Context, meta Meta, force bool) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	saved, err := f.load(ctx)
	if err != nil {
		return false, err
	}
	now := f.now().UTC()
	f.saved = nil
	if saved != nil {
		f.saved = &Saved{Meta: saved.Meta, Complete: saved.Complete, Started: saved.Started, Updated: saved.Updated, Sink: saved.Sink}
		for _, sh := range saved.Shards {
			f.saved.Rows += sh.Rows
		}
	}
	if saved == nil || saved.Complete {
		f.doc = document{Version: fileVersion, Meta: meta, Started: now, Updated: now}
		return false, nil
	}
	if saved.Meta.Fingerprint != meta.Fingerprint && !force {
		return false, fmt.Errorf("%w: %s holds an unfinished run with fingerprint %s (table %s, source %s) but this run's fingerprint is %s; "+
			"use --restart to discard it and start over, or --force to resume its positions anyway",
			ErrMismatch, f.path, saved.Meta.Fingerprint, saved.Meta.Table, saved.Meta.Source, meta.Fingerprint)
	}
	f.doc = *saved
	f.doc.Meta = meta
	for _, s := range f.doc.Shards {
		if s.Status == Running {
			s.Status = Pending // interrupted: read again after its position
		}
	}
	return true, nil
}

// Plan implements Store.
func (f *FileStore) Plan(_ context.Context, entity string, split func() ([]source.Range, error)) ([]*Shard, error) {
	f.mu.Lock()
	var have []*Shard
	for _, s := range f.doc.Shards {
		if s.Entity == entity {
			have = append(have, s)
		}
	}
	f.mu.Unlock()
	if len(have) > 0 {
		return have, nil
	}
	ranges, err := split()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range ranges {
		s := &Shard{Entity: entity, ID: i, Range: r, Status: Pending}
		f.doc.Shards = append(f.doc.Shards, s)
		have = append(have, s)
	}
	return have, nil
}

// Claim implements Store: shards are handed out in plan order.
func (f *FileStore) Claim(context.Context) (*Shard, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.next < len(f.doc.Shards) {
		s := f.doc.Shards[f.next]
		f.next++
		if s.Status == Pending {
			s.Status = Running
			return s, true, nil
		}
	}
	return nil, false, nil
}

// Advance implements Store.
func (f *FileStore) Advance(s *Shard, pos []value.Value, rows, items, rejected int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pos != nil {
		s.After = pos
	}
	s.Rows += rows
	s.Items += items
	s.Rejected += rejected
}

// Done implements Store.
func (f *FileStore) Done(s *Shard) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s.Status = Done
}

// Flush implements Store.
func (f *FileStore) Flush(ctx context.Context) error {
	f.mu.Lock()
	attached := f.attached
	f.mu.Unlock()
	if attached != nil {
		state, release := attached()
		defer release()
		f.mu.Lock()
		f.doc.Sink = state
		f.mu.Unlock()
	}
	f.mu.Lock()
	f.doc.Updated = f.now().UTC()
	if f.path == "" {
		f.mu.Unlock()
		return nil
	}
	data, err := json.MarshalIndent(&f.doc, "", " ")
	f.mu.Unlock()
	if err != nil {
		return fmt.Errorf("encoding checkpoint: %w", err)
	}
	if f.blob != nil {
		return f.blob.Write(ctx, data)
	}
	if err := durable.WriteFile(f.path, data); err != nil {
		return fmt.Errorf("writing checkpoint: %w", err)
	}
	return nil
}

// Finish implements Store.
func (f *FileStore) Finish(ctx context.Context) error {
	f.mu.Lock()
	f.doc.Complete = true
	f.mu.Unlock()
	return f.Flush(ctx)
}

// Discard implements Store.
func (f *FileStore) Discard(ctx context.Context) error {
	if f.path == "" {
		return nil
	}
	if f.blob != nil {
		return f.blob.Delete(ctx)
	}
	err := os.Remove(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Shards implements Store.
func (f *FileStore) Shards() []Shard {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Shard, len(f.doc.Shards))
	for i, s := range f.doc.Shards {
		out[i] = *s
	}
	return out
}

// Started implements Store.
func (f *FileStore) Started() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.doc.Started
}
