package incremental

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/verify"
)

// Job is one migrate --incremental.
type Job struct {
	// Source gives the watermarks (it must be a Watermarker) and the
	// snapshot every pass reads.
	Source source.Source
	// Plan is the whole mapping's; the main pass reads it narrowed.
	Plan *mapping.Plan
	// Client reads the table (the nest check, the key sweep) and deletes
	// from it; Writer is the main pass's writer to it.
	Client *dynamodb.Client
	Writer sink.Sink
	// Meta is the checkpoint's; its Fingerprint is the mapping's.
	Meta checkpoint.Meta
	// Force resumes a main-pass checkpoint made with another mapping.
	Force bool
	// MainPass is called once the snapshot is open, before any pass
	// writes. It returns the main pass's options (progress, rejects, the
	// source's reach) given the pass's checkpoint, and a function called
	// as soon as the main pass ends.
	MainPass func(store *checkpoint.FileStore) (opts pipeline.Options, done func(), err error)
}

// Options tune a run.
type Options struct {
	// Begin says where the state is and how the run starts; DryRun is
	// ignored (see Begin for a preview).
	Begin BeginOptions
	// Readers is the snapshot's.
	Readers int
	// Passes are the options of the soft-delete pass and the nest check.
	Passes pipeline.Options
	// MaxWCU caps the nest check's writes (0: adaptive).
	MaxWCU float64
	// FullSweep makes the key sweep scan every key of the table.
	FullSweep bool
	// Sweep are the key sweep's comparer options (verify.ModePrune);
	// Run sets what makes it a key sweep.
	Sweep  verify.Options
	Logger *slog.Logger
}

// Outcome is what Run did, for the caller to report.
type Outcome struct {
	// Checkpoint is the main pass's checkpoint, "" when the run stopped
	// before its main pass; Summary is the main pass's.
	Checkpoint string
	Summary    *pipeline.Summary
	// Result is set once the main pass succeeded without rejected rows,
	// even when a later pass failed.
	Result *Result
}

// Result is the report of an incremental run.
type Result struct {
	// Full is set on a run without earlier state: everything was read.
	Full          bool  `json:"full"`
	RowsRederived int64 `json:"rows_rederived"`
	ItemsWritten  int64 `json:"items_written"`
	// NestChecked and NestRewritten are the nest check's: items of
	// nest-bearing entities compared with the table, and those that
	// differed and were written (included in ItemsWritten).
	NestRowsRead  int64 `json:"rows_read_nest_check"`
	NestChecked   int64 `json:"items_compared_nest_check"`
	NestRewritten int64 `json:"items_written_nest_check"`
	// SweepRowsRead and SweepKeysScanned are what the key sweep read: the
	// source rows (key columns only) and the table's keys.
	SweepRowsRead    int64 `json:"rows_read_sweep"`
	SweepKeysScanned int64 `json:"target_keys_scanned"`
	// SweepMode is "scan" (every key of the table read) or "query" (only
	// the collections whose key digest changed, that appeared, vanished or
	// were written); CollectionsQueried and TargetKeysRead are what it
	// read; Collections is how many collections the source makes, and
	// CollectionsChanged and CollectionsVanished are the digest
	// comparison's (a query sweep's).
	SweepMode           string `json:"sweep_mode,omitempty"`
	CollectionsQueried  int64  `json:"collections_queried"`
	TargetKeysRead      int64  `json:"target_keys_read"`
	Collections         int64  `json:"collections"`
	CollectionsChanged  int64  `json:"collections_changed"`
	CollectionsVanished int64  `json:"collections_vanished"`
	// SweepScanReason says why a sweep scanned the table rather than
	// querying the changed collections.
	SweepScanReason string   `json:"sweep_scan_reason,omitempty"`
	ItemsDeleted    int64    `json:"items_deleted"`
	SoftDeleted     int64    `json:"items_deleted_soft"`
	Swept           int64    `json:"items_deleted_sweep"`
	SweepSkipped    bool     `json:"sweep_skipped,omitempty"`
	ReadInFull      []string `json:"entities_read_in_full,omitempty"`
	// Since is the bound of each table (previous watermark minus the
	// overlap); Watermarks the ones recorded for the next run.
	Since      map[string]string `json:"since,omitempty"`
	Watermarks map[string]string `json:"watermarks"`
	State      string            `json:"state"`
	Prune      *verify.Report    `json:"sweep,omitempty"`
}

// run is one Run under way.
type run struct {
	*Bounds
	job  Job
	opts Options
	log  *slog.Logger
	snap source.Snapshot
	// softDeleted counts the items of soft-deleted rows deleted.
	softDeleted int64
	// trackers remember the collections this run's passes wrote.
	trackers []*Tracker
}

// Run is migrate --incremental: it reads the watermarks, then, in one
// snapshot, deletes the items of soft-deleted rows, re-derives the items
// of the rows changed since the last run (the main pass), rewrites the
// parents a nested child left (the nest check) and deletes the items no
// row produces (the key sweep), and only then moves the watermarks. The
// caller has Checked job.Plan.
func Run(ctx context.Context, job Job, opts Options) (Outcome, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bo := opts.Begin
	bo.Fingerprint, bo.DryRun, bo.Logger = job.Meta.Fingerprint, false, log
	b, err := Begin(ctx, job.Source, job.Plan, bo)
	if err != nil {
		return Outcome{}, err
	}
	r := &run{Bounds: b, job: job, opts: opts, log: log}
	writer := r.track(job.Writer)
	if r.snap, err = job.Source.Snapshot(ctx, source.SnapshotOptions{Readers: opts.Readers}); err != nil {
		return Outcome{}, err
	}
	defer r.snap.Close()

	store := checkpoint.NewFileStore(CheckpointFor(b.StatePath, "changes"))
	mainOpts, done, err := job.MainPass(store)
	if err != nil {
		return Outcome{}, err
	}
	meta := job.Meta
	meta.Fingerprint = b.Fingerprint
	if err := r.deleteSoftDeleted(ctx, meta); err != nil {
		done()
		return Outcome{}, err
	}
	sum, err := pipeline.Run(ctx, pipeline.Job{
		Plan: b.Plan, Snapshot: r.snap, Sink: writer, Store: store, Force: job.Force, Meta: meta,
	}, mainOpts)
	done()
	out := Outcome{Checkpoint: store.Path(), Summary: sum}
	if err != nil {
		return out, err
	}
	// A main pass with rejected or skipped rows leaves the watermarks
	// where they were.
	if err := sum.Rejections(); err != nil {
		return out, fmt.Errorf("%w; the watermarks were not moved, and the next incremental run covers the same changes", err)
	}
	out.Result, err = r.finish(ctx, sum, meta)
	return out, err
}

// finish runs the nest check and the key sweep after the main pass
// succeeded (unless NoDeletes) and only then moves the watermarks.
func (r *run) finish(ctx context.Context, sum *pipeline.Summary, meta checkpoint.Meta) (*Result, error) {
	res := &Result{Full: r.Pending.Full, ReadInFull: r.ReadInFull, Since: r.Pending.Since, Watermarks: r.Pending.Watermarks, State: r.StatePath}
	res.RowsRederived = sum.Total.RowsRead
	res.ItemsWritten = sum.Total.ItemsWritten
	res.SoftDeleted = r.softDeleted
	if r.opts.Begin.NoDeletes {
		res.SweepSkipped = true
	} else {
		if !r.Pending.Full {
			if err := r.checkNests(ctx, meta, res); err != nil {
				return res, err
			}
		}
		pruned, err := r.sweepKeys(ctx, res)
		if pruned != nil {
			res.Prune = pruned
			res.Swept = pruned.Deleted
			res.SweepRowsRead = pruned.Totals.RowsSeen
			res.SweepKeysScanned = pruned.KeysScanned
			res.SweepMode = pruned.SweepMode
			res.CollectionsQueried = pruned.CollectionsQueried
			res.TargetKeysRead = pruned.TargetKeysRead
			res.Collections = pruned.Collections
			res.CollectionsChanged = pruned.CollectionsChanged
			res.CollectionsVanished = pruned.CollectionsVanished
		}
		if err != nil {
			return res, err
		}
	}
	res.ItemsDeleted = res.SoftDeleted + res.Swept
	r.state.Watermarks = r.Pending.Watermarks
	r.state.Completed = time.Now().UTC()
	r.state.Pending = nil
	if err := Save(r.StatePath, r.state); err != nil {
		return res, err
	}
	return res, nil
}

// track wraps a sink of this run's writes, so that the key sweep queries
// the collections they touched.
func (r *run) track(s sink.Sink) sink.Sink {
	t := NewTracker(s, r.job.Plan.Table)
	r.trackers = append(r.trackers, t)
	return t
}

// written returns the partition keys this run wrote; ok is false when a
// tracker overflowed.
func (r *run) written() ([]types.AttributeValue, bool) {
	var out []types.AttributeValue
	for _, t := range r.trackers {
		pks, ok := t.Written()
		if !ok {
			return nil, false
		}
		out = append(out, pks...)
	}
	return out, true
}
