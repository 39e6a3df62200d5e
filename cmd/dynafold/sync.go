package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/cdc"
	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/metrics"
	"github.com/dynafold/dynafold/patterns"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/plan"
	"github.com/dynafold/dynafold/shadow"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/drivers"
	"github.com/dynafold/dynafold/source/postgres"
	"github.com/dynafold/dynafold/statestore"
)

func (a *app) syncCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Load the table, then keep it in step with the source's changes (live sync)",
		Long: `Checks the source's prerequisites, creates a logical replication slot and a
publication (dynafold_<table>), loads every entity as migrate does in the
snapshot the slot exported, then applies every committed change to every
item it touches, until stopped (SIGINT/SIGTERM: exit 4, resumable) or, with
--until-caught-up, until every change committed before it started is
applied (exit 0). Run 'dynafold sync cleanup' to drop the slot when done.

MySQL and MariaDB: sync reads the binary log as a replica (--server-id),
from the binlog position recorded before the initial load; nothing is
created on the server, so binlog retention must cover the load and any
stop of sync.

A lost source connection (a restart, a failover behind the same address)
and DynamoDB going away are waited out: sync reconnects and goes on from
its confirmed position (--give-up-after bounds the wait). A source that
changed under it (the slot gone or invalidated, the binlog purged, another
server) stops it with exit 2, or with --on-source-reset resnapshot is
loaded again. --metrics-addr serves Prometheus metrics, /healthz and
/readyz (see docs/sync-service.md).

Sync's state (the confirmed position, the row index, the initial load's
checkpoint) is kept in local files by default. --state dynamodb://TABLE
keeps it in a DynamoDB table instead, so that sync can move to another
host with no reload, and a second sync on the same state waits as a
standby (not ready) and takes over when the active one's lease expires
(see docs/sync-state.md).

Exit codes: 0 caught up · 1 failure (DDL on a mapped column, a row under
on_error: fail) · 2 invalid usage, mapping, a missing prerequisite or a
reset source · 4 interrupted, or a fault outlasted --give-up-after (state
saved; run again to resume).`,
		Example: `  dynafold sync --config configs/portfolios.yaml
  dynafold sync --config configs/portfolios.yaml --metrics-addr 10.0.3.7:9464 --on-source-reset resnapshot
  dynafold sync --config configs/portfolios.yaml --state dynamodb://dynafold-state --metrics-addr 0.0.0.0:9464
  dynafold sync --config configs/portfolios.yaml --until-caught-up   # at cutover, after writes stop
  dynafold sync cleanup --config configs/portfolios.yaml`,
		Args: cobra.NoArgs,
		RunE: a.runSync,
	}
	f := cmd.Flags()
	addSyncRunFlags(f)
	addSyncStreamFlags(f)
	addShadowFlags(f)
	addServiceFlags(f)
	addStateFlags(f)
	cmd.AddCommand(a.syncCleanupCommand())
	return cmd
}

func (a *app) syncCleanupCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Drop the replication slot, the publication and the sync checkpoint",
		Long: `Drops what sync created: the replication slot (which otherwise keeps every
byte of WAL since its position on the server's disk), the publication, the
sync checkpoint, the row index and the initial load's checkpoint. The table
is left as it is.`,
		Example: `  dynafold sync cleanup --config configs/portfolios.yaml`,
		Args:    cobra.NoArgs,
		RunE:    a.runSyncCleanup,
	}
	f := cmd.Flags()
	f.String("checkpoint", "", "sync checkpoint (default .dynafold/<table>.sync.json)")
	f.String("slot", "", "replication slot and publication name, folded to lower-case letters, digits and _ (default dynafold_<table>)")
	addStateFlags(f)
	return cmd
}

// slotName is dynafold_<table> folded to what PostgreSQL accepts in a slot
// name (postgres.FoldSlotName), cut to its 63 bytes.
func slotName(table string) string {
	s := postgres.FoldSlotName("dynafold_" + table)
	if len(s) > postgres.MaxSlotName {
		s = s[:postgres.MaxSlotName]
	}
	return s
}

// syncSlot is the replication slot (and publication) sync, sync cleanup
// and plan name: --slot folded, or dynafold_<table>. Every command folds
// it the same way, so that cleanup drops the slot sync created. A --slot
// that cannot be folded into a slot name is invalid usage.
func (a *app) syncSlot(table string) (string, error) {
	flag := a.v.GetString("slot")
	if flag == "" {
		return slotName(table), nil
	}
	slot, err := postgres.SlotName(flag)
	if err != nil {
		return "", usageError(fmt.Errorf("--slot: %w", err))
	}
	return slot, nil
}

// syncStatePath is the sync checkpoint: --checkpoint, or the table's
// default under .dynafold/.
func (a *app) syncStatePath(table string) string {
	if p := a.v.GetString("checkpoint"); p != "" {
		return p
	}
	return filepath.Join(".dynafold", table+".sync.json")
}

func (a *app) runSync(cmd *cobra.Command, _ []string) (err error) {
	ctx := cmd.Context()
	rep := a.newReport("sync")
	defer func() { err = a.finishReport(rep, err) }()
	r, err := a.openSync(ctx, rep)
	if r != nil {
		defer r.close()
	}
	if err != nil {
		return err
	}
	if err := r.openChanges(ctx); err != nil {
		return err
	}
	if err := r.openTarget(ctx); err != nil {
		return err
	}
	progress, restore := a.progress()
	sum, runErr := cdc.Run(ctx, r.job(), r.options(progress))
	restore()
	if progress != nil {
		progress.Close()
	}
	shadowCounts := r.stopShadow()
	if sum != nil {
		if _, ok := r.changes.(drivers.Slotted); ok {
			sum.Slot = r.slot
		}
		rep.Result = sum
		if sum.Load != nil {
			rep.Summary = sum.Load
		}
		a.printSyncSummary(sum, r.state)
	}
	if r.shadowRun != nil {
		rep.Result = syncShadowResult{Summary: sum, Shadow: shadowCounts}
		a.printShadowSummary(shadowCounts)
	}
	return syncExit(runErr)
}

// syncExit maps sync's stops to exit codes: a schema change the mapping
// no longer fits, and a reset source under --on-source-reset=stop, are
// the operator's to fix (2), as a changed mapping is; a failing row is a
// failure (1). The state is kept.
func syncExit(err error) error {
	var se *cdc.SchemaError
	var reset *cdc.SourceResetError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		// The mapping no longer fits the source: the fix is the
		// operator's, as for a mapping that fails to load.
		return usageError(err)
	case errors.As(err, &reset):
		return usageError(err)
	}
	return err
}

// syncService is sync's service settings, checked.
type syncService struct {
	warnRetained int64
}

// checkSyncServiceFlags refuses service settings that make no sense,
// before anything is opened.
func (a *app) checkSyncServiceFlags() (syncService, error) {
	var s syncService
	switch r := a.v.GetString("on-source-reset"); r {
	case cdc.ResetStop, cdc.ResetResnapshot:
	default:
		return s, fmt.Errorf("--on-source-reset must be stop or resnapshot, not %q", r)
	}
	switch r := a.v.GetString("on-schema-change"); r {
	case cdc.SchemaRederive, cdc.SchemaStop:
	default:
		return s, fmt.Errorf("--on-schema-change must be rederive or stop, not %q", r)
	}
	if d := a.v.GetDuration("give-up-after"); d < 0 {
		return s, fmt.Errorf("--give-up-after must not be negative, not %s", d)
	}
	if d := a.v.GetDuration("heartbeat-every"); d < time.Second {
		return s, fmt.Errorf("--heartbeat-every must be at least 1s, not %s", d)
	}
	n, err := parseByteSize(a.v.GetString("warn-retained-wal"))
	if err != nil {
		return s, fmt.Errorf("--warn-retained-wal: %w", err)
	}
	s.warnRetained = n
	return s, nil
}

func problemsError(probs []source.Problem) error {
	var b strings.Builder
	b.WriteString("the source is not ready for live sync:")
	for _, p := range probs {
		fmt.Fprintf(&b, "\n- %s\n  fix: %s", p.What, p.Fix)
	}
	return errors.New(b.String())
}

// introspectAll describes every table the mapping reads (entities, joins
// and nested children).
func introspectAll(ctx context.Context, src source.Source, cfg *mapping.Config) (map[source.TableRef]*source.Table, error) {
	refs, _ := mapping.SourceTables(cfg)
	return src.Introspect(ctx, refs)
}

func (a *app) runSyncCleanup(cmd *cobra.Command, _ []string) (err error) {
	ctx := cmd.Context()
	rep := a.newReport("sync cleanup")
	defer func() { err = a.finishReport(rep, err) }()
	l, err := a.loadForSource()
	if err != nil {
		return err
	}
	table := l.static.Table.Name
	rep.Table = table
	statePath := a.syncStatePath(table)
	slot, err := a.syncSlot(table)
	if err != nil {
		return err
	}
	dsn, err := l.dsn()
	if err != nil {
		return err
	}
	src, err := openSource(ctx, dsn, 2)
	if err != nil {
		return err
	}
	defer src.Close()
	changes, err := drivers.OpenChangeSource(src, drivers.ChangeOptions{Slot: slot, Table: table})
	if err != nil {
		return usageError(err)
	}
	dropped, err := changes.Cleanup(ctx)
	if err != nil {
		return err
	}
	removed, err := a.removeSyncState(ctx, l, statePath, table)
	dropped = append(dropped, removed...)
	if err != nil {
		return err
	}
	rep.Result = map[string]any{"removed": dropped}
	if len(dropped) == 0 {
		if _, ok := changes.(drivers.Slotted); ok {
			fmt.Fprintf(a.stdout, "nothing to clean up for table %s (slot %s)\n", table, slot)
		} else {
			fmt.Fprintf(a.stdout, "nothing to clean up for table %s (MySQL keeps no state for sync on the server)\n", table)
		}
		return nil
	}
	for _, d := range dropped {
		fmt.Fprintf(a.stdout, "removed %s\n", d)
	}
	return nil
}

func openSource(ctx context.Context, dsn source.DSN, maxConns int) (source.Source, error) {
	return drivers.Open(ctx, dsn, maxConns)
}

// syncReadiness runs sync's prerequisite checks for plan, with the slot
// sync would use (syncSlot).
func syncReadiness(ctx context.Context, src source.Source, p *mapping.Plan, tables map[source.TableRef]*source.Table, slot string) (*plan.SyncReadiness, error) {
	r := &plan.SyncReadiness{Checked: true}
	changes, err := drivers.OpenChangeSource(src, drivers.ChangeOptions{Slot: slot, Table: p.Table.Name})
	if err != nil {
		return &plan.SyncReadiness{Note: err.Error()}, nil
	}
	defer changes.Close()
	if err := cdc.Unsupported(p, tables); err != nil {
		r.Unsupported = err.Error()
		return r, nil
	}
	if r.Problems, err = cdc.Check(ctx, p, tables, changes); err != nil {
		return nil, err
	}
	r.Ready = len(r.Problems) == 0
	return r, nil
}

// roundReaders is how many connections read a round's slices at once:
// --concurrency, but no more than the cores sync runs on. Each slice read
// costs sync CPU to decode and build; past one reader a core, readers
// only contend for it (figures: docs/performance.md, reading a round over
// several connections).
func roundReaders(concurrency int) int {
	return max(1, min(concurrency, runtime.GOMAXPROCS(0)))
}

// --- sync --shadow-patterns: the continuous shadow comparison ---

// shadowConns is the shadow comparison's own connection budget on the
// source: a comparison holds a connection only while it reads.
const shadowConns = 2

// syncShadowResult is sync's report result with the shadow comparison's
// per-pattern counts.
type syncShadowResult struct {
	*cdc.Summary
	Shadow []shadow.Counts `json:"shadow"`
}

// startShadow starts the shadow comparison beside sync when
// --shadow-patterns asks for it, on a source of its own. stop ends it and
// returns its counts; with the flag off, the runner is nil and stop
// returns nothing.
func (a *app) startShadow(ctx context.Context, l *loaded, dsn source.DSN, slot string, plan *mapping.Plan, live *cdc.Live, api patterns.QueryAPI, obs *observability) (run *shadow.Runner, stop func() []shadow.Counts, err error) {
	stop = func() []shadow.Counts { return nil }
	if !a.v.GetBool("shadow-patterns") {
		return nil, stop, nil
	}
	rate := a.v.GetFloat64("shadow-rate")
	if rate <= 0 {
		return nil, stop, usageError(fmt.Errorf("--shadow-rate must be positive, not %g", rate))
	}
	refresh := a.v.GetDuration("shadow-params-every")
	if refresh <= 0 {
		return nil, stop, usageError(fmt.Errorf("--shadow-params-every must be positive, not %s", refresh))
	}
	src, err := openSource(ctx, dsn, shadowConns)
	if err != nil {
		return nil, stop, err
	}
	ro, ok := src.(patterns.Source)
	if !ok {
		src.Close()
		return nil, stop, usageError(fmt.Errorf("--shadow-patterns: the %s source cannot run read-only queries", src.Driver()))
	}
	sh, err := patterns.PrepareShadow(ctx, ro, plan)
	if err != nil {
		src.Close()
		return nil, stop, usageError(mappingPathError(l.path, err))
	}
	positions, err := drivers.OpenChangeSource(src, drivers.ChangeOptions{Slot: slot, ServerID: a.v.GetUint32("server-id"), Table: plan.Table.Name})
	if err != nil {
		src.Close()
		return nil, stop, usageError(err)
	}
	var series *metrics.Shadow
	if obs.reg != nil {
		series = metrics.NewShadow(obs.reg, plan.Table.Name, sh.Patterns())
	}
	if len(sh.Patterns()) == 0 {
		a.log.Warn("--shadow-patterns: no access pattern has sql:, nothing to compare")
	}
	run = shadow.New(shadow.Patterns(sh, api), ro, positions, live, shadow.Options{Rate: rate, Refresh: refresh, Logger: a.log, Metrics: series})
	sctx, cancel := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(sctx)
	g.Go(func() error { return run.Run(gctx) })
	stop = func() []shadow.Counts {
		cancel()
		_ = g.Wait()
		positions.Close()
		src.Close()
		return run.Counts()
	}
	return run, stop, nil
}

// printShadowSummary prints each pattern's shadow comparisons (text
// output; the report has them under result.shadow).
func (a *app) printShadowSummary(counts []shadow.Counts) {
	if a.v.GetString("output") == "json" {
		return
	}
	for _, c := range counts {
		fmt.Fprintf(a.stdout, "shadow %q: %s comparisons, %s mismatches, %s skipped\n", c.Pattern,
			render.Thousands(c.Comparisons), render.Thousands(c.Mismatches), render.Thousands(c.Skipped))
	}
}

// addSyncRunFlags declares sync's flags of the initial load, the writes,
// the state and the apply rounds.
func addSyncRunFlags(f *pflag.FlagSet) {
	f.Int("concurrency", 4, "initial load: shards read at once")
	f.Int("writers", 8, "BatchWriteItem requests in flight")
	f.Int("page-size", pipeline.DefaultPageSize, "initial load: rows per keyset page")
	f.Float64("max-wcu", 0, "cap on write capacity units per second (default: the table's provisioned capacity, or adaptive)")
	f.String("checkpoint", "", "sync checkpoint (default .dynafold/<table>.sync.json; the row index and load checkpoint sit beside it)")
	f.Duration("checkpoint-every", time.Second, "initial load: how often its checkpoint is saved")
	f.String("slot", "", "replication slot and publication name, folded to lower-case letters, digits and _ (default dynafold_<table>)")
	f.Bool("until-caught-up", false, "exit 0 once every change committed before this command started is applied")
	f.Bool("force", false, "go on with a sync checkpoint made with a different mapping")
	f.String("reject-file", "", "JSON-lines file for rows rejected by on_error: reject (default .dynafold/<table>.rejects.jsonl)")
	f.String("progress", "auto", "progress display: auto, tty, json or none")
	f.Duration("status-every", 5*time.Second, "how often a JSON status line is printed while streaming (--progress json)")
	f.Duration("grace", 5*time.Second, "after a stop signal, how long writes in flight may finish")
	f.Int("round-changes", 5000, "changes gathered into one apply round (whole transactions)")
}

// addSyncStreamFlags declares sync's flags of the stream: the source's
// identity, faults, resets, schema changes, heartbeats and retention.
func addSyncStreamFlags(f *pflag.FlagSet) {
	f.Duration("fence", 5*time.Second, "after a sync that died uncleanly (SIGKILL, crash) or lost its lease, how long to wait for the writes it left in flight before writing (with a lease: from when they stopped)")
	f.Uint32("server-id", 0, "MySQL/MariaDB: the replica server_id the binlog is read as (default 2^31 + a hash of the table name, 2147483648-4294967294)")
	f.Duration("give-up-after", 0, "end with exit 4 (resumable) when one fault of the source or DynamoDB lasts longer than this (default: wait as long as it takes)")
	f.String("on-source-reset", cdc.ResetStop, "when the slot is gone or invalidated, the binlog purged or the server another one: stop (exit 2, naming the fix) or resnapshot (load again from a new slot or position and delete what no row produces)")
	f.String("on-schema-change", cdc.SchemaRederive, "when DDL changed a mapped table's values without row events (a column dropped and added with a default, a type change, a rewrite, TRUNCATE): rederive (read the entities that use the table again, then go on) or stop (exit 2); changes that keep every value go on, and those the mapping cannot follow stop, either way")
	f.String("heartbeat-table", "", "SCHEMA.TABLE (MySQL: DATABASE.TABLE) to upsert one row into every --heartbeat-every, created if missing: for managed servers where keepalives alone do not move an idle slot")
	f.Duration("heartbeat-every", 30*time.Second, "how often the heartbeat row is written (with --heartbeat-table)")
	f.Int("index-cache", statestore.DefaultCacheRows, "with --state dynamodb://: rows whose row-index entries are kept in memory (some 90 bytes each); the index is read into it when sync takes the state, and when it fits, no row is looked up in the state table after; 0 keeps none")
	f.String("warn-retained-wal", "1GiB", "PostgreSQL: warn when the slot retains more WAL than this (or than half of max_slot_wal_keep_size)")
}

// addShadowFlags declares the continuous shadow comparison's flags
// (docs/shadow.md).
func addShadowFlags(f *pflag.FlagSet) {
	f.Bool("shadow-patterns", false, "while syncing, keep comparing the access patterns' SQL answers with DynamoDB's, each after sync applied past its snapshot (dynafold_shadow_* metrics; mismatches logged)")
	f.Float64("shadow-rate", shadow.DefaultRate, "with --shadow-patterns: comparisons started per second")
	f.Duration("shadow-params-every", shadow.DefaultRefresh, "with --shadow-patterns: how often each pattern's params: sql is read again, so that new rows are compared too")
}
