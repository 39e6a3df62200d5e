package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/incremental"
	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/source/drivers"
	"github.com/dynafold/dynafold/verify"
)

func (a *app) migrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Read the source, build items and write them to the table",
		Long: `Reads every entity of the mapping in one consistent snapshot, builds the
items, and writes them with BatchWriteItem at the rate the table allows.
Progress is checkpointed: a run that is interrupted or killed resumes where
it stopped when run again with the same mapping (--restart starts over).`,
		Args: cobra.NoArgs,
		RunE: a.runMigrate,
	}
	f := cmd.Flags()
	f.Int("concurrency", 4, "shards read at once")
	f.Int("writers", 8, "BatchWriteItem requests in flight")
	f.Int("page-size", pipeline.DefaultPageSize, "rows per keyset page")
	f.Float64("max-wcu", 0, "cap on write capacity units per second (default: the table's provisioned capacity, or adaptive)")
	f.String("checkpoint", "", "checkpoint file (default .dynafold/<table>.checkpoint.json)")
	f.Duration("checkpoint-every", time.Second, "how often the checkpoint is saved (each save is one small file write)")
	f.Bool("restart", false, "discard an existing checkpoint and start over")
	f.Bool("force", false, "resume a checkpoint made with a different mapping")
	f.String("reject-file", "", "JSON-lines file for rows rejected by on_error: reject (default .dynafold/<table>.rejects.jsonl)")
	f.Int64("max-rejects", -1, "stop after more than N rows are skipped or rejected (-1: no limit)")
	f.String("progress", "auto", "progress display: auto, tty, json or none")
	f.Duration("grace", 5*time.Second, "after a stop signal, how long writes in flight may finish")
	f.Bool("exact-counts", false, "count rows exactly before reading, for an exact ETA")
	f.Bool("dry-run", false, "write nothing (no items, no checkpoint): report what the run would change, as diff does; exit 3 when it would change something")
	f.Bool("prune", false, "after a successful run, delete stale items (produced by no row) from the table, and report how many; --sweep says where they are looked for")
	f.Bool("incremental", false, "re-derive only the items whose rows (own, joined or nested) changed since the last incremental run, per the mapping's changes:; the first run reads everything")
	f.Duration("overlap", 5*time.Minute, "with --incremental: how far before the last watermark rows still count as changed (clock skew, late commits)")
	f.Bool("full-sweep", false, "with --incremental: scan every key of the table for stale items instead of querying only the collections whose keys changed since the last run (for a table something else wrote to)")
	f.Bool("no-deletes", false, "with --incremental: skip the key sweep that deletes the items of rows deleted at the source and the nest check that rewrites parents a nested child left (soft deletes are still applied)")
	addServiceFlags(f)
	addCompareFlags(f)
	return cmd
}

// migrateOptions are migrate's flags that decide what the run is, read
// once and checked together.
type migrateOptions struct {
	readers, writers               int
	incremental, dryRun, prune     bool
	restart, force                 bool
	sweepSet, incrementalOnlyFlags bool
	overlap                        time.Duration
}

func (a *app) migrateOptions(cmd *cobra.Command) (migrateOptions, error) {
	f := cmd.Flags()
	o := migrateOptions{
		readers: a.v.GetInt("concurrency"), writers: a.v.GetInt("writers"),
		incremental: a.v.GetBool("incremental"), dryRun: a.v.GetBool("dry-run"), prune: a.v.GetBool("prune"),
		restart: a.v.GetBool("restart"), force: a.v.GetBool("force"),
		sweepSet:             f.Changed("sweep"),
		incrementalOnlyFlags: a.v.GetBool("no-deletes") || a.v.GetBool("full-sweep") || f.Changed("overlap"),
		overlap:              a.v.GetDuration("overlap"),
	}
	switch {
	case o.incremental && o.sweepSet:
		return o, errSweepIncremental
	case o.dryRun:
		return o, nil // a preview checks its own flags
	case o.sweepSet && !o.prune:
		return o, errors.New("--sweep applies only with --prune or --dry-run")
	case !o.incremental && o.incrementalOnlyFlags:
		return o, errors.New("--no-deletes, --full-sweep and --overlap apply only with --incremental")
	case o.incremental && o.prune:
		return o, errors.New("--prune does not combine with --incremental, whose key sweep deletes stale items already (--no-deletes skips it)")
	case o.overlap < 0:
		return o, fmt.Errorf("--overlap must not be negative, not %s", o.overlap)
	}
	return o, nil
}

func (a *app) runMigrate(cmd *cobra.Command, _ []string) (err error) {
	mo, err := a.migrateOptions(cmd)
	if err != nil {
		return usageError(err)
	}
	if mo.dryRun {
		if mo.incremental {
			return a.runIncrementalPreview(cmd, "migrate --incremental --dry-run")
		}
		return a.runDryRun(cmd)
	}
	ctx := cmd.Context()
	rep := a.newReport("migrate")
	defer func() { err = a.finishReport(rep, err) }()

	readers, writers := mo.readers, mo.writers
	o, err := a.open(ctx, rep, preamble{conns: readers + 4, checkpoint: ".checkpoint.json", lint: true,
		flags: func() error { return a.checkMigrateFlags(readers, writers) }})
	if err != nil {
		return err
	}
	defer o.Close()
	l, src, plan, dsn, ckptPath := o.l, o.src, o.plan, o.dsn, o.checkpoint

	client, writer, err := a.tableWriter(ctx, l, plan, writers)
	if err != nil {
		return err
	}

	store := checkpoint.NewFileStore(ckptPath)
	if mo.restart {
		if err := store.Discard(ctx); err != nil {
			return fmt.Errorf("discarding checkpoint: %w", err)
		}
	}
	pass, stopObs := a.observedPass(plan.Table.Name, readers, writers, dsn, func() float64 { return float64(writer.Stats().Retried) })
	defer stopObs()
	if mo.incremental {
		return a.runIncremental(ctx, rep, src, plan, client, writer, ckptPath, dsn, pass)
	}
	return a.migrateFull(ctx, rep, mo, o, client, writer, store, pass)
}

// migrateFull is a migration that is not incremental, once the source and
// the table are open: the pass over a snapshot, then --prune.
func (a *app) migrateFull(ctx context.Context, rep *report, mo migrateOptions, o *opened, client *dynamodb.Client, writer *sink.DynamoWriter,
	store *checkpoint.FileStore, pass func(*checkpoint.FileStore) (pipeline.Options, func(), error)) error {
	// A full run writes without a key sweep: the incremental runs'
	// collection digests no longer bound what the table holds.
	if err := incremental.DiscardDigests(incremental.DigestsFor(incremental.PathFor(o.checkpoint))); err != nil {
		return err
	}
	snap, err := o.src.Snapshot(ctx, source.SnapshotOptions{Readers: mo.readers})
	if err != nil {
		return err
	}
	defer snap.Close()
	opts, done, err := pass(store)
	if err != nil {
		return err
	}
	plan := o.plan
	meta := checkpoint.Meta{Fingerprint: rep.Fingerprint, Table: plan.Table.Name, Source: o.dsn.Identity(), RunID: rep.RunID}
	sum, runErr := pipeline.Run(ctx, pipeline.Job{
		Plan: plan, Snapshot: snap, Sink: writer, Store: store, Force: mo.force, Meta: meta,
	}, opts)
	done()
	rep.Summary = sum
	rep.Checkpoint = o.checkpoint
	var pruned *verify.Report
	if runErr == nil && mo.prune {
		pruned, runErr = a.prune(ctx, plan, snap, client, sum, o.dsn.Identity())
		if pruned != nil {
			rep.Result = pruned
		}
	}
	if sum != nil {
		a.printMigrateResult(sum, o.checkpoint, pruned)
	}
	if runErr != nil {
		return runErr
	}
	return sum.Rejections()
}

// lockCheckpoint returns the run's checkpoint file (--checkpoint, or name
// under .dynafold/) and holds its lock: one run per checkpoint, refused
// before anything is opened.
func (a *app) lockCheckpoint(name string) (string, func(), error) {
	path := a.v.GetString("checkpoint")
	if path == "" {
		path = filepath.Join(".dynafold", name)
	}
	unlock, err := checkpoint.Lock(path)
	return path, unlock, err
}

// rejectFile is --reject-file, or the table's default under .dynafold/.
func (a *app) rejectFile(table string) string {
	if p := a.v.GetString("reject-file"); p != "" {
		return p
	}
	return filepath.Join(".dynafold", table+".rejects.jsonl")
}

// runOptions are the pipeline options of a run that reads the source and
// writes a sink (migrate, export), from the flags they share.
func (a *app) runOptions(readers, writers int, dsn source.DSN, rejectPath string, progress pipeline.Progress, onStart func(pipeline.StartInfo)) pipeline.Options {
	maxRejects := a.v.GetInt64("max-rejects")
	return pipeline.Options{
		Readers: readers, Writers: writers, PageSize: a.v.GetInt("page-size"),
		MaxRejects: maxRejects, MaxRejectsSet: maxRejects >= 0, RejectFile: rejectPath,
		Grace: a.v.GetDuration("grace"), Stop: a.stop, ExactCounts: a.v.GetBool("exact-counts"),
		FlushEvery: a.v.GetDuration("checkpoint-every"),
		Progress:   progress, Logger: a.log,
		// A source that goes away mid-run is waited for, then named in
		// one line (drivers.Reach).
		Reach:   drivers.NewReach(dsn, drivers.OpenOptions{Attempts: a.v.GetInt("source-attempts"), Logger: a.log}),
		OnStart: onStart,
	}
}

// checkMigrateFlags refuses values that make no sense before anything is
// opened, so a typo costs no connection and no checkpoint.
func (a *app) checkMigrateFlags(readers, writers int) error {
	if a.v.GetFloat64("max-wcu") < 0 {
		return fmt.Errorf("--max-wcu must not be negative, not %g", a.v.GetFloat64("max-wcu"))
	}
	return a.checkRunFlags(readers, writers)
}

// checkRunFlags checks the flags every pipeline run (migrate, export)
// has.
func (a *app) checkRunFlags(readers, writers int) error {
	switch {
	case readers < 1 || writers < 1:
		return errors.New("--concurrency and --writers must be at least 1")
	case a.v.GetInt("page-size") < 1:
		return fmt.Errorf("--page-size must be at least 1, not %d", a.v.GetInt("page-size"))
	case a.v.GetInt64("max-rejects") < -1:
		return fmt.Errorf("--max-rejects must be -1 (no limit) or more, not %d", a.v.GetInt64("max-rejects"))
	case a.v.GetDuration("grace") < 0:
		return fmt.Errorf("--grace must not be negative, not %s", a.v.GetDuration("grace"))
	case a.v.GetDuration("checkpoint-every") < 10*time.Millisecond:
		return fmt.Errorf("--checkpoint-every must be at least 10ms, not %s", a.v.GetDuration("checkpoint-every"))
	}
	switch p := a.v.GetString("progress"); p {
	case "auto", "tty", "json", "none":
	default:
		return fmt.Errorf("--progress must be auto, tty, json or none, not %q", p)
	}
	return nil
}

// progress picks the display: live bars on a terminal, JSON lines on
// stderr otherwise. While bars are drawn, log lines and messages go
// through them (restore ends that, before the display is closed).
func (a *app) progress() (p pipeline.Progress, restore func()) {
	mode := a.v.GetString("progress")
	if mode == "auto" {
		mode = "json"
		if isTerminal(a.stderr) && !dumbTerminal() {
			mode = "tty"
		}
	}
	switch mode {
	case "tty":
		// The display needs the terminal itself; what enters it is
		// redacted on the way in (the console, sync's status line).
		tp := pipeline.NewTerminalProgress(a.tty)
		return tp, a.console.through(tp.Writer())
	case "json":
		return pipeline.NewJSONProgress(a.stderr, 5*time.Second), func() {}
	}
	return nil, func() {}
}

// announceStart says, before anything is read, whether the run resumes a
// checkpoint and how far it had got, or rewrites a migration the
// checkpoint records as complete.
func (a *app) announceStart(store *checkpoint.FileStore, path string, si pipeline.StartInfo) {
	saved := store.Saved()
	switch {
	case si.Resumed && saved != nil:
		of := "of an unknown total"
		if si.RowsEstimate >= 0 {
			of = "of ~" + render.Thousands(max(si.RowsEstimate, si.RowsDone))
		}
		fmt.Fprintf(a.console, "dynafold: resuming run %s from %s: %s rows %s done (saved %s)\n",
			saved.Meta.RunID, path, render.Thousands(si.RowsDone), of, saved.Updated.Format(time.RFC3339))
	case saved != nil && saved.Complete:
		fmt.Fprintf(a.console, "dynafold: %s records a completed run (%s, %s rows, finished %s); migrating everything again, which rewrites every item\n",
			path, saved.Meta.RunID, render.Thousands(saved.Rows), saved.Updated.Format(time.RFC3339))
	}
}
