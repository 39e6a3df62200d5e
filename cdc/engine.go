package cdc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/metrics"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/statestore"
	"github.com/dynafold/dynafold/value"
)

// Job is one sync: the mapping, the source (its change log, its current
// state and its snapshots for the initial load), the writer and where the
// Writer is the sink sync writes the table with: a sink.Sink whose
// writes wait out an endpoint that goes away, and that a caught-up stream
// rearms after the guard gave up (sink.DynamoWriter).
type Writer interface {
	sink.Sink
	// Rearm lets the next request wait again for an endpoint the writer
	// gave up on.
	Rearm()
}

// state is kept.
type Job struct {
	Plan   *mapping.Plan
	Tables map[source.TableRef]*source.Table
	// Changes is the source's change log.
	Changes source.ChangeSource
	// Reader reads the source's current state.
	Reader CurrentReader
	// Snapshot opens the initial load's snapshot; importID is the one the
	// slot exported, or "" for a new one.
	Snapshot func(ctx context.Context, importID string) (source.Snapshot, error)
	Writer   Writer
	// State keeps the sync state, the row index and the initial load's
	// checkpoint (statestore.File or statestore.Dynamo). Run does not
	// close it.
	State       statestore.Store
	Fingerprint string
	Identity    string
	RunID       string
	// SourceTransient classifies the source's errors: true for a fault a
	// later attempt can outlive (a lost or refused connection, a server
	// restarting), which sync waits out instead of stopping.
	SourceTransient func(error) bool
	// Prune deletes every item of the table that no source row produces,
	// reading the source as it is now, and returns how many it deleted:
	// what a resnapshot runs after its load (migrate --prune's sweep over
	// the whole table).
	Prune func(ctx context.Context) (int64, error)
}

// Options tune a sync.
type Options struct {
	// Load tunes the initial load (the migrate pipeline).
	Load pipeline.Options
	// Writers is how many BatchWriteItem requests a round keeps in flight.
	Writers int
	// Readers is how many connections may read a round's slices at once,
	// when the source's reader can fork (source.Forker); 0 or 1 reads
	// them over the round's one connection.
	Readers int
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
	// GiveUpAfter ends sync resumably (pipeline.ResumableError) when one transient
	// fault lasts longer; 0 waits as long as it takes.
	GiveUpAfter time.Duration
	// OnSourceReset is what a reset source leads to: ResetStop (the
	// default) returns a SourceResetError, ResetResnapshot loads the table
	// again from a new slot or position and prunes what no row produces.
	OnSourceReset string
	// OnSchemaChange is what a schema change that changed a mapped
	// table's values without row events leads to: SchemaRederive (the
	// default) derives the entities that read it again and goes on;
	// SchemaStop stops sync (exit 2) instead.
	OnSchemaChange string
	// HeartbeatEvery is how often a source.Heartbeater writes its
	// heartbeat (default 30s); it writes only when given a table.
	HeartbeatEvery time.Duration
	// WarnRetainedWAL is the retained log, in bytes, past which sync warns
	// (default 1 GiB); it also warns past half of the server's limit.
	WarnRetainedWAL int64
	// Metrics receives sync's series (nil: none); Health its liveness and
	// readiness (nil: none).
	Metrics *metrics.Sync
	Health  *metrics.Health
	// Live, when given, is kept current for a monitor (see Live).
	Live *Live
	// IndexCache is how many rows' row-index entries are kept in memory
	// (statestore.Cached); 0 keeps none.
	IndexCache int
	// Lease, when given, keeps this sync the only one writing a shared
	// state: Run waits as a standby until it holds it, and goes back to
	// standby when it loses it (see runLeased). Fence then counts from
	// when the old holder stopped writing.
	Lease Lease
}

// What a reset source leads to (Options.OnSourceReset).
const (
	ResetStop       = "stop"
	ResetResnapshot = "resnapshot"
)

// RowFailure is a row that cannot become items under on_error: fail.
type RowFailure struct{ Err *mapping.RowError }

func (e *RowFailure) Error() string { return e.Err.Error() }
func (e *RowFailure) Unwrap() error { return e.Err }

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
	// IndexCache is how the row-index lookups of this run were answered.
	IndexCache *IndexCacheStats `json:"row_index_cache,omitempty"`
	// SchemaChanges are the schema changes of mapped tables this run met,
	// and what it did about each.
	SchemaChanges []SchemaFinding `json:"schema_changes,omitempty"`
}

// IndexCacheStats counts the row-index lookups the in-memory cache
// answered (hits) and those it passed to the store (misses), and what
// the cache read of the index when the run began.
type IndexCacheStats struct {
	Hits   int64                `json:"hits"`
	Misses int64                `json:"misses"`
	Warmed statestore.WarmStats `json:"warmed"`
}

type engine struct {
	job    Job
	opts   Options
	plan   *mapping.Plan
	graph  *graph
	store  statestore.Store
	writer Writer
	// writers write a round's items to writer (sink.Writers.WriteSet).
	writers *sink.Writers
	state   *State
	reject  *pipeline.RejectFile
	log     *slog.Logger

	run Counters
	// abandoned is set when a stop gave up on writes in flight.
	abandoned atomic.Bool

	metrics *metrics.Sync
	health  *metrics.Health
	// beat ticks every second while sync waits, for liveness and status.
	beat *time.Ticker
	// fault is the transient fault being waited out, if any.
	fault *fault
	// live, status and stateName feed the status line and the series.
	live      *Live
	status    *statusNote
	stateName atomic.Value
	// warned is set once the retained-WAL warning was logged.
	warned bool
	// findings are the schema changes met this run (schema_apply.go).
	findings []SchemaFinding
}

// Check returns the prerequisites the source lacks for syncing plan.
func Check(ctx context.Context, plan *mapping.Plan, tables map[source.TableRef]*source.Table, cs source.ChangeSource) ([]source.Problem, error) {
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

// Run syncs until stopped (or caught up, with UntilCaughtUp). Transient
// faults of the source and of DynamoDB are waited out; a reset source
// stops it or, with ResetResnapshot, loads the table again.
func Run(ctx context.Context, job Job, opts Options) (*Summary, error) {
	opts = opts.withDefaults()
	if opts.Lease != nil {
		return runLeased(ctx, job, opts)
	}
	return run(ctx, job, opts)
}

// run is one sync holding the state, until it stops.
func run(ctx context.Context, job Job, opts Options) (*Summary, error) {
	g, err := buildGraph(job.Plan, job.Tables)
	if err != nil {
		return nil, err
	}
	e := &engine{job: job, opts: opts, plan: job.Plan, graph: g, writer: job.Writer, log: opts.Logger,
		writers: &sink.Writers{Sink: job.Writer, N: opts.Writers},
		metrics: opts.Metrics, health: opts.Health, live: opts.Live, status: &statusNote{}, beat: time.NewTicker(time.Second)}
	if e.live == nil {
		e.live = NewLive()
	}
	defer e.beat.Stop()
	e.setState(metrics.StateLoading)
	started := time.Now()
	sum := &Summary{Started: started.UTC(), Index: indexName(job.State)}

	st, err := loadState(ctx, job.State)
	if err != nil {
		return nil, err
	}
	switch {
	case st == nil:
		st = &State{Version: 1, Table: job.Plan.Table.Name, Fingerprint: job.Fingerprint, Source: job.Identity, Created: time.Now().UTC()}
	case st.Fingerprint != job.Fingerprint && !opts.Force:
		return nil, fmt.Errorf("%w: the sync checkpoint %s was made with another mapping, source or table; run dynafold sync cleanup to start over, or --force to go on", checkpoint.ErrMismatch, job.State.Where())
	}
	st.Fingerprint = job.Fingerprint
	e.state = st
	sum.Phase = st.Phase
	if st.Confirmed != "" {
		pos := st.Confirmed
		e.live.confirmed.Store(&pos)
	}
	// The cache lives as long as this run: a sync that loses its lease
	// and takes it again runs anew, with an empty one.
	e.store = statestore.NewCached(job.State, opts.IndexCache)
	if c, ok := e.store.(*statestore.Cached); ok {
		// Read while the stream starts; the first lookup waits for it.
		c.Warm(ctx, func(w statestore.WarmStats) {
			if w.Err != nil {
				e.log.Warn("reading the row index into memory failed; its rows are read as they are needed", "error", w.Err)
				return
			}
			e.log.Info("row index read into memory", "rows", w.Rows, "seconds", fmt.Sprintf("%.1f", w.Seconds), "whole_index", w.All)
		})
	}
	if st.Running != nil && opts.Lease == nil {
		// With a lease, taking it over waited for those writes.
		e.log.Warn("the last sync did not stop cleanly; waiting for the writes it left in flight before writing",
			"pid", st.Running.PID, "started", st.Running.Started, "fence", opts.Fence)
		select {
		case <-time.After(opts.Fence):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	e.log.Info("sync starting", "phase", st.Phase, "confirmed", st.Confirmed, "checkpoint", job.State.Where())
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
	defer e.finish(sum, started)
	return sum, e.attempts(ctx, target, sum)
}

// withDefaults fills in the options left unset.
func (opts Options) withDefaults() Options {
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
	if opts.HeartbeatEvery <= 0 {
		opts.HeartbeatEvery = 30 * time.Second
	}
	if opts.WarnRetainedWAL <= 0 {
		opts.WarnRetainedWAL = 1 << 30
	}
	if opts.OnSourceReset == "" {
		opts.OnSourceReset = ResetStop
	}
	if opts.OnSchemaChange == "" {
		opts.OnSchemaChange = SchemaRederive
	}
	return opts
}

// attempts runs attempt until sync stops, fails or catches up: a reset
// source is loaded again when the options say so, and a transient fault
// is waited out before the next attempt.
func (e *engine) attempts(ctx context.Context, target source.Position, sum *Summary) error {
	for {
		err := e.attempt(ctx, target, sum)
		if err == nil {
			return nil
		}
		var reset *SourceResetError
		if errors.As(err, &reset) && e.opts.OnSourceReset == ResetResnapshot {
			err = e.resnapshot(ctx, reset)
			if err == nil {
				continue
			}
		}
		side := e.side(err)
		if side == notTransient {
			return err
		}
		if err := e.waitOut(ctx, side, err); err != nil {
			return err
		}
		if side == targetFault {
			e.writer.Rearm()
		}
	}
}

// attempt runs sync from its recorded state until it stops, fails or
// catches up: it checks that the source is still the one recorded, loads
// the table if it is not loaded yet, then streams. After a transient fault
// Run calls it again.
func (e *engine) attempt(ctx context.Context, target source.Position, sum *Summary) error {
	st := e.state
	changes := e.job.Changes
	server, err := changes.Identity(ctx)
	if err != nil {
		return err
	}
	if st.Server != "" && server != st.Server {
		return &SourceResetError{What: fmt.Sprintf("the source is another server: it was %s and is %s (a restore, or a failover to another history)", st.Server, server), Command: e.resetCommand()}
	}
	if st.Phase != "" {
		lost, err := changes.Lost(ctx, st.Confirmed)
		if err != nil {
			return err
		}
		if lost != "" {
			return &SourceResetError{What: lost, Command: e.resetCommand()}
		}
	}
	var resume source.Position
	if st.Phase != "" {
		resume = st.Confirmed
	}
	start, err := changes.Prepare(ctx, e.graph.needs, resume)
	if err != nil {
		return err
	}
	if st.Phase == phaseStream && start.Created {
		return &SourceResetError{What: fmt.Sprintf("the change log could not be read from %s and was started anew", st.Confirmed), Command: e.resetCommand()}
	}
	if st.Phase == "" || (st.Phase == phaseLoad && start.Created) {
		st.Phase = phaseLoad
		st.Start = start.From
		st.Confirmed = start.From
		e.live.confirmed.Store(&start.From)
		// The load reads the tables as they are now: their shapes are
		// what later schema changes are judged against.
		st.Shapes = nil
	}
	if err := e.recordShapes(ctx); err != nil {
		return err
	}
	st.Server = server
	if err := e.save(); err != nil {
		return err
	}
	sum.Phase = st.Phase
	if st.Phase == phaseLoad {
		if err := e.loadPhase(ctx, start.Snapshot, sum); err != nil {
			return err
		}
	}
	sum.Phase = phaseStream
	return e.stream(ctx, target, sum)
}

// resetCommand is the command that recovers a reset source.
func (e *engine) resetCommand() string {
	return "dynafold sync --on-source-reset=resnapshot (with this sync's other flags): a new slot or position, the initial load again, then the items no row produces are deleted"
}

func (e *engine) finish(sum *Summary, started time.Time) {
	sum.Run = e.run
	sum.Total = e.state.Totals
	sum.Confirmed = e.state.Confirmed
	sum.Writes = e.writer.Stats()
	sum.Seconds = time.Since(started).Seconds()
	sum.SchemaChanges = e.findings
	if c, ok := e.store.(*statestore.Cached); ok {
		hits, misses := c.Stats()
		sum.IndexCache = &IndexCacheStats{Hits: hits, Misses: misses, Warmed: c.Warmed()}
	}
}

// save persists the state; the store makes the row index durable first,
// so the index is never older than the position the state records. It
// runs on its own context: the last save, after a stop, must still land.
func (e *engine) save() error {
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	return e.state.save(ctx, e.store)
}

// saveTimeout bounds one save of the state.
const saveTimeout = time.Minute

// indexName names the row index for the summary: its file, or the store.
func indexName(s statestore.Store) string {
	if f, ok := s.(*statestore.File); ok {
		return f.IndexPath()
	}
	return s.Where()
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
