package cdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// Job is one sync: the mapping, the source (its change log, its current
// state and its snapshots for the initial load), the writer and where the
// state is kept.
type Job struct {
	Plan   *mapping.Plan
	Tables map[source.TableRef]*source.Table
	// Changes is the source's change log.
	Changes ChangeSource
	// Reader reads the source's current state.
	Reader CurrentReader
	// Snapshot opens the initial load's snapshot; importID is the one the
	// slot exported, or "" for a new one.
	Snapshot func(ctx context.Context, importID string) (source.Snapshot, error)
	Writer   *sink.DynamoWriter
	// StatePath is the sync checkpoint; the row index and the initial
	// load's checkpoint are kept beside it (IndexPath, LoadPath).
	StatePath   string
	Fingerprint string
	Identity    string
	RunID       string
}

// IndexPath is the row index kept beside a sync checkpoint.
func IndexPath(statePath string) string { return trimJSON(statePath) + ".index" }

// LoadPath is the initial load's checkpoint kept beside a sync checkpoint.
func LoadPath(statePath string) string { return trimJSON(statePath) + ".load.json" }

func trimJSON(p string) string { return strings.TrimSuffix(p, ".json") }

// Options tune a sync.
type Options struct {
	// Load tunes the initial load (the migrate pipeline).
	Load pipeline.Options
	// Writers is how many BatchWriteItem requests a round keeps in flight.
	Writers int
	// RoundChanges bounds the changes gathered into one round (whole
	// transactions; one larger transaction is one round).
	RoundChanges int
	// UntilCaughtUp stops with success once every change committed before
	// the sync started is applied.
	UntilCaughtUp bool
	// Force resumes a sync whose mapping changed.
	Force bool
	// Stop is closed on the first signal: finish the round, confirm, save.
	Stop <-chan struct{}
	// Grace bounds how long a round's writes may finish after Stop.
	Grace time.Duration
	// Status receives the live status about once a second.
	Status     func(Status)
	RejectFile string
	Logger     *slog.Logger
	// Fence is how long a sync that finds the last one died uncleanly
	// waits before it writes (default 5s): requests the dead process had
	// sent may still be applied by the server, and a write of this run must
	// not be overtaken by one of them.
	Fence time.Duration
}

// ErrSchemaChanged stops sync when DDL changed a mapped column.
type SchemaError struct{ Change source.SchemaChange }

func (e *SchemaError) Error() string {
	return fmt.Sprintf("table %s column %s was %s; sync stopped with its state kept: update the mapping (and the table: dynafold sync cleanup, then sync again) or undo the change, then rerun",
		e.Change.Table, e.Change.Column, e.Change.What)
}

// TruncateError stops sync on TRUNCATE of a mapped table.
type TruncateError struct{ Table source.TableRef }

func (e *TruncateError) Error() string {
	return fmt.Sprintf("table %s was truncated; sync stopped with its state kept. Live sync does not apply TRUNCATE: run dynafold sync cleanup and sync again for a full reload", e.Table)
}

// RowFailure is a row that cannot become items under on_error: fail.
type RowFailure struct{ Err *mapping.RowError }

func (e *RowFailure) Error() string { return e.Err.Error() }
func (e *RowFailure) Unwrap() error { return e.Err }

// ResumableError is pipeline's: the state is saved and a rerun resumes.
type ResumableError = pipeline.ResumableError

// Summary is what a sync did, for the final lines and --report.
type Summary struct {
	Phase     string            `json:"phase"`
	Load      *pipeline.Summary `json:"load,omitempty"`
	Run       Counters          `json:"this_run"`
	Total     Counters          `json:"total"`
	Confirmed source.Position   `json:"confirmed_position"`
	Target    source.Position   `json:"caught_up_target,omitempty"`
	CaughtUp  bool              `json:"caught_up"`
	Writes    sink.Stats        `json:"writes"`
	Started   time.Time         `json:"started"`
	Seconds   float64           `json:"seconds"`
	Slot      string            `json:"slot,omitempty"`
	Index     string            `json:"row_index"`
}

type engine struct {
	job    Job
	opts   Options
	plan   *mapping.Plan
	graph  *graph
	index  *rowIndex
	writer *sink.DynamoWriter
	state  *State
	reject *pipeline.RejectFile
	log    *slog.Logger

	run Counters
	// abandoned is set when a stop gave up on writes in flight.
	abandoned atomic.Bool
}

// Check returns the prerequisites the source lacks for syncing plan.
func Check(ctx context.Context, plan *mapping.Plan, tables map[source.TableRef]*source.Table, cs ChangeSource) ([]source.Problem, error) {
	g, err := buildGraph(plan, tables)
	if err != nil {
		return nil, err
	}
	return cs.Check(ctx, g.needs)
}

// Unsupported returns why plan cannot be synced, or nil.
func Unsupported(plan *mapping.Plan, tables map[source.TableRef]*source.Table) error {
	_, err := buildGraph(plan, tables)
	return err
}

// Run syncs until stopped (or caught up, with UntilCaughtUp).
func Run(ctx context.Context, job Job, opts Options) (*Summary, error) {
	if opts.Writers <= 0 {
		opts.Writers = 8
	}
	if opts.RoundChanges <= 0 {
		opts.RoundChanges = 5000
	}
	if opts.Grace <= 0 {
		opts.Grace = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Fence <= 0 {
		opts.Fence = 5 * time.Second
	}
	g, err := buildGraph(job.Plan, job.Tables)
	if err != nil {
		return nil, err
	}
	e := &engine{job: job, opts: opts, plan: job.Plan, graph: g, writer: job.Writer, log: opts.Logger}
	started := time.Now()
	sum := &Summary{Started: started.UTC(), Index: IndexPath(job.StatePath)}

	st, err := loadState(job.StatePath)
	if err != nil {
		return nil, err
	}
	switch {
	case st == nil:
		st = &State{Version: 1, Table: job.Plan.Table.Name, Fingerprint: job.Fingerprint, Source: job.Identity, Created: time.Now().UTC()}
	case st.Fingerprint != job.Fingerprint && !opts.Force:
		return nil, fmt.Errorf("%w: the sync checkpoint %s was made with another mapping, source or table; run dynafold sync cleanup to start over, or --force to go on", checkpoint.ErrMismatch, job.StatePath)
	}
	st.Fingerprint = job.Fingerprint
	e.state = st
	if err := os.MkdirAll(dirOf(job.StatePath), 0o755); err != nil {
		return nil, err
	}
	// The row index's file lock is the sync's lock: a second sync of the
	// same state stops here.
	e.index, err = openIndex(IndexPath(job.StatePath))
	if err != nil {
		return nil, err
	}
	defer e.index.Close()
	if st.Running != nil {
		e.log.Warn("the last sync did not stop cleanly; waiting for the writes it left in flight before writing",
			"pid", st.Running.PID, "started", st.Running.Started, "fence", opts.Fence)
		select {
		case <-time.After(opts.Fence):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e.log.Info("sync starting", "phase", st.Phase, "confirmed", st.Confirmed, "checkpoint", job.StatePath)
	st.Running = &Running{PID: os.Getpid(), Started: time.Now().UTC()}
	defer func() {
		// A stop that abandoned writes in flight is not clean.
		if !e.abandoned.Load() {
			st.Running = nil
		}
		if err := e.save(); err != nil {
			e.log.Warn("saving the sync checkpoint failed", "error", err)
		}
	}()
	if opts.RejectFile != "" {
		e.reject = pipeline.NewRejectFile(opts.RejectFile, job.RunID)
		defer e.reject.Close()
	}

	// The target of --until-caught-up is read before anything else, so
	// that every change committed before this command is included.
	var target source.Position
	if opts.UntilCaughtUp {
		if target, err = job.Changes.Head(ctx); err != nil {
			return nil, err
		}
		sum.Target = target
	}

	start, err := job.Changes.Prepare(ctx, g.needs)
	if err != nil {
		return nil, err
	}
	if st.Phase == phaseStream && start.Created {
		return nil, fmt.Errorf("the replication slot (MySQL and MariaDB: the binlog file of the saved position) was gone and the stream starts again from the log's end: changes made since %s were not kept, so the table may miss them. Run dynafold sync cleanup and sync again for a full reload", st.Confirmed)
	}
	if st.Phase == "" || (st.Phase == phaseLoad && start.Created) {
		st.Phase = phaseLoad
		st.Start = start.From
		st.Confirmed = start.From
	}
	if err := e.save(); err != nil {
		return nil, err
	}
	sum.Phase = st.Phase
	if st.Phase == phaseLoad {
		load, err := e.load(ctx, start.Snapshot)
		sum.Load = load
		if load != nil {
			e.run.LoadedItems = load.Total.ItemsWritten
		}
		if err != nil {
			// The load's writers may have been cut off after the grace.
			e.abandoned.Store(errors.Is(err, pipeline.ErrInterrupted))
			e.finish(sum, started)
			return sum, err
		}
		st.Phase = phaseStream
		if err := e.save(); err != nil {
			return sum, err
		}
		_ = os.Remove(LoadPath(job.StatePath))
		e.log.Info("initial load complete; streaming changes", "from", st.Confirmed)
	}
	sum.Phase = phaseStream
	err = e.stream(ctx, target, sum)
	e.finish(sum, started)
	return sum, err
}

func (e *engine) finish(sum *Summary, started time.Time) {
	sum.Run = e.run
	sum.Total = e.state.Totals
	sum.Confirmed = e.state.Confirmed
	sum.Writes = e.writer.Stats()
	sum.Seconds = time.Since(started).Seconds()
}

// save persists the state after making the row index durable: the index
// is never older than the position the state records.
func (e *engine) save() error {
	if err := e.index.Sync(); err != nil {
		return fmt.Errorf("syncing the row index: %w", err)
	}
	return e.state.save(e.job.StatePath)
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
	store := &indexedStore{Store: checkpoint.NewFileStore(LoadPath(e.job.StatePath)), index: e.index}
	return pipeline.Run(ctx, pipeline.Job{
		Plan: e.plan, Snapshot: snap, Sink: e.writer, Store: store, Force: e.opts.Force,
		Meta: checkpoint.Meta{Fingerprint: e.job.Fingerprint, Table: e.plan.Table.Name, Source: e.job.Identity, RunID: e.job.RunID},
	}, opts)
}

// indexedStore makes the row index durable before each save of the load's
// checkpoint.
type indexedStore struct {
	checkpoint.Store
	index *rowIndex
}

func (s *indexedStore) Flush(ctx context.Context) error {
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

// rowFailed applies the entity's on_error to a row that cannot become
// items: fail stops sync; skip and reject count it (reject also writes the
// reject file), and the row then has no items.
func (e *engine) rowFailed(ep *mapping.EntityPlan, row value.Row, err error) error {
	var rerr *mapping.RowError
	if !errors.As(err, &rerr) {
		rerr = &mapping.RowError{Entity: ep.Name, SourceKey: ep.SourceKey(row), Reason: err.Error(), Row: ep.RowValues(row)}
	}
	switch ep.OnError {
	case mapping.PolicySkip:
	case mapping.PolicyReject:
		if e.reject != nil {
			if werr := e.reject.Write(rerr); werr != nil {
				return werr
			}
		}
	default:
		return &RowFailure{Err: rerr}
	}
	e.log.Warn("row cannot become items; its items are removed", "entity", ep.Name, "policy", string(ep.OnError), "error", rerr.Error())
	return nil
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func dirOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return "."
}
