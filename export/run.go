package export

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/source"
)

// MaxImportObjects is ImportTable's limit on the S3 objects of one import.
const MaxImportObjects = 50_000

// Manifest is manifest.json: what an import needs to know and check.
type Manifest struct {
	Version     int       `json:"version"`
	Table       string    `json:"table"`
	Format      string    `json:"input_format"`
	Compression string    `json:"compression"`
	DataPrefix  string    `json:"data_prefix"`
	Items       int64     `json:"items"`
	Bytes       int64     `json:"bytes"`
	Size        int64     `json:"size"`
	Files       []File    `json:"files"`
	RunID       string    `json:"run_id"`
	Finished    time.Time `json:"finished"`
}

// InUseError is returned when a new export finds files at its
// destination: an import reads every object under the prefix, so they
// would be imported too. It is the caller's usage error.
type InUseError struct {
	Dest  string
	Files int
}

func (e *InUseError) Error() string {
	return fmt.Sprintf("%s already holds an export (%d data files): use --restart to replace it, or another destination", e.Dest, e.Files)
}

// Job is one export: the items of Plan, read from Source, written as
// ImportTable input files to Dest under the checkpoint at Checkpoint.
type Job struct {
	Plan   *mapping.Plan
	Source source.Source
	Dest   Destination
	// Checkpoint is the checkpoint file's path, held by the caller; Meta
	// is what it records (its Fingerprint covers the destination).
	Checkpoint string
	Meta       checkpoint.Meta
	// Force resumes a checkpoint made with another mapping; Restart
	// discards the checkpoint and the destination's files first.
	Force, Restart bool
	// Pass is called once the snapshot is open, before anything is
	// written: it returns the pipeline's options (progress, rejects, the
	// source's reach) given the checkpoint, and a function called as soon
	// as the pass ends.
	Pass func(store *checkpoint.FileStore) (opts pipeline.Options, done func(), err error)
}

// RunOptions tune an export.
type RunOptions struct {
	// Readers is the snapshot's; Writers the items handed to the files at
	// once (a file is open per writer, up to one per CPU).
	Readers, Writers int
	// FileBytes, MaxPendingBytes: see the Sink's Options.
	FileBytes, MaxPendingBytes int64
	// MaxInFlight bounds the rows read but not yet in a durable file.
	MaxInFlight int64
}

// Outcome is what Run did, for the caller to report.
type Outcome struct {
	// Summary is the pass's (nil when the export was already complete or
	// stopped before its pass).
	Summary *pipeline.Summary
	// Manifest is the one written, or the complete export's found (then
	// Complete is set and nothing was written).
	Manifest *Manifest
	Complete bool
}

// Run exports: it resumes the checkpoint when there is one, finds an
// export the checkpoint records as complete (and writes nothing), makes
// the destination hold exactly the files the checkpoint counts, runs the
// pipeline into the files and writes the manifest last. A pass that ends
// with rejected rows still writes the manifest; the Summary says so.
func Run(ctx context.Context, job Job, o RunOptions) (*Outcome, error) {
	store := checkpoint.NewFileStore(job.Checkpoint)
	if job.Restart {
		if err := store.Discard(ctx); err != nil {
			return nil, fmt.Errorf("discarding checkpoint: %w", err)
		}
		if err := clearDestination(ctx, job.Dest); err != nil {
			return nil, err
		}
	}
	resumed, err := store.Open(ctx, job.Meta, job.Force)
	if err != nil {
		return nil, err
	}
	if !resumed && !job.Restart {
		m, err := finishedExport(ctx, job.Dest, store.Saved(), job.Meta.Fingerprint)
		if err != nil || m != nil {
			return &Outcome{Manifest: m, Complete: m != nil}, err
		}
	}
	var saved *State
	if resumed && store.SinkState() != nil {
		saved = &State{}
		if err := json.Unmarshal(store.SinkState(), saved); err != nil {
			return nil, fmt.Errorf("checkpoint %s: export state: %w", job.Checkpoint, err)
		}
	}
	if err := prepareDestination(ctx, job.Dest, saved, job.Restart); err != nil {
		return nil, err
	}
	// One open file per writer, up to one per CPU: compression is what a
	// lane parallelizes, and every lane's file is committed at each
	// rotation, so more lanes than CPUs only make more, smaller files for
	// the same memory.
	lanes := min(o.Writers, runtime.GOMAXPROCS(0))
	out := New(job.Dest, saved, Options{Lanes: lanes, FileBytes: o.FileBytes, MaxPendingBytes: o.MaxPendingBytes, Prefix: job.Meta.RunID})
	defer out.Close()
	store.Attach(out.Snapshot)

	snap, err := job.Source.Snapshot(ctx, source.SnapshotOptions{Readers: o.Readers})
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	opts, done, err := job.Pass(store)
	if err != nil {
		return nil, err
	}
	opts.MaxInFlight = o.MaxInFlight
	sum, err := pipeline.Run(ctx, pipeline.Job{
		Plan: job.Plan, Snapshot: snap, Sink: out, Store: store, Force: job.Force, Meta: job.Meta,
	}, opts)
	done()
	res := &Outcome{Summary: sum}
	if err != nil {
		return res, err
	}
	res.Manifest, err = writeManifest(ctx, job.Dest, job.Plan.Table.Name, job.Meta.RunID, out.Files())
	return res, err
}

// writeManifest writes the manifest of files, once every file is durable.
func writeManifest(ctx context.Context, dest Destination, table, runID string, files []File) (*Manifest, error) {
	if len(files) > MaxImportObjects {
		return nil, fmt.Errorf("the export has %d files, more than ImportTable's %d objects per import: export again with a larger --max-in-flight or --file-size", len(files), MaxImportObjects)
	}
	m := &Manifest{Version: 1, Table: table, Format: "DYNAMODB_JSON", Compression: "GZIP", DataPrefix: DataDir, Files: files, RunID: runID, Finished: time.Now().UTC()}
	for _, f := range files {
		m.Items += f.Items
		m.Bytes += f.Bytes
		m.Size += f.Size
	}
	data, _ := json.MarshalIndent(m, "", "  ")
	if err := dest.PutManifest(ctx, append(data, '\n')); err != nil {
		return nil, fmt.Errorf("writing the manifest: %w", err)
	}
	return m, nil
}

// finishedExport returns the manifest of the export the checkpoint records
// as complete when a rerun has nothing to do: the checkpoint's fingerprint
// is this run's (the same mapping, source and destination), and the
// destination holds exactly that export, its manifest written by the
// checkpoint's run and listing the files the checkpoint counts, with no
// other data file beside them. Otherwise it returns nil, and the run goes
// on as a new export (which refuses a destination holding files).
func finishedExport(ctx context.Context, dest Destination, saved *checkpoint.Saved, fingerprint string) (*Manifest, error) {
	if saved == nil || !saved.Complete || saved.Meta.Fingerprint != fingerprint || saved.Sink == nil {
		return nil, nil
	}
	var st State
	if err := json.Unmarshal(saved.Sink, &st); err != nil {
		return nil, nil
	}
	data, err := dest.ReadManifest(ctx)
	if err != nil || data == nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil || m.RunID != saved.Meta.RunID {
		return nil, nil
	}
	names, err := dest.List(ctx)
	if err != nil {
		return nil, err
	}
	var counted, listed []string
	for _, f := range st.Files {
		counted = append(counted, f.Name)
	}
	for _, f := range m.Files {
		listed = append(listed, f.Name)
	}
	slices.Sort(names)
	slices.Sort(counted)
	slices.Sort(listed)
	if !slices.Equal(counted, listed) || !slices.Equal(counted, names) {
		return nil, nil
	}
	return &m, nil
}

// prepareDestination makes the destination hold exactly the files the
// checkpoint counts: a new export refuses a destination with files (an
// import reads every object under the prefix), and a resumed one deletes
// the files that became durable after its last saved checkpoint (their
// rows are read again).
func prepareDestination(ctx context.Context, dest Destination, saved *State, restart bool) error {
	names, err := dest.List(ctx)
	if err != nil {
		return err
	}
	if saved == nil {
		has, err := dest.ManifestExists(ctx)
		if err != nil {
			return err
		}
		if (len(names) > 0 || has) && !restart {
			return &InUseError{Dest: dest.String(), Files: len(names)}
		}
		return nil
	}
	keep := map[string]bool{}
	for _, f := range saved.Files {
		keep[f.Name] = true
	}
	var orphans []string
	for _, n := range names {
		if !keep[n] {
			orphans = append(orphans, n)
		}
	}
	return dest.Remove(ctx, orphans)
}

// clearDestination deletes a previous export (--restart): its manifest
// first, so that no manifest ever lists files that are gone.
func clearDestination(ctx context.Context, dest Destination) error {
	if err := dest.RemoveManifest(ctx); err != nil {
		return err
	}
	names, err := dest.List(ctx)
	if err != nil {
		return err
	}
	return dest.Remove(ctx, names)
}
