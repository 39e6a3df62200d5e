package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/export"
	"github.com/dynafold/dynafold/internal/render"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/source"
)

func (a *app) exportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the items as ImportTable input files (gzip DynamoDB JSON) to a directory or S3",
		Long: `Reads the source exactly as migrate does and writes the items it would
write, as gzip-compressed DynamoDB JSON lines ({"Item":{...}}), to
--to file:///dir/ or --to s3://bucket/prefix/. Data files go under data/,
a manifest (files, item counts, bytes, SHA-256) to manifest.json. An item
counts as exported only once its file is durable (fsynced and renamed, or
uploaded); a killed export resumes with every item in exactly one file.
Load the files with 'dynafold table import --from <same URL>'.`,
		Args: cobra.NoArgs,
		RunE: a.runExport,
	}
	f := cmd.Flags()
	f.String("to", "", "destination: file:///dir/ or s3://bucket/prefix/")
	f.String("s3-endpoint", "", "S3-compatible endpoint URL (path-style addressing); default: AWS")
	f.String("s3-region", "", "S3 region (default: the AWS chain)")
	f.String("spool-dir", "", "local directory for files before upload to S3 (default: the system temporary directory)")
	f.Int64("file-size", 256<<20, "close a file once it holds this many bytes of uncompressed JSON")
	f.Int("concurrency", 4, "shards read at once")
	f.Int("writers", 4, "items handed to the files at once; files are written (encoded and compressed) one per writer, up to one per CPU")
	f.Int("page-size", 2000, "rows per keyset page")
	f.Int64("max-pending-bytes", export.DefaultPendingBytes, "memory for items in files not yet durable (their JSON plus a share of their rows); at this the open files are committed, so it bounds memory and how small files get")
	f.Int64("max-in-flight", 50_000, "source rows read but not yet in a durable file; files are closed early when the run waits on them, so this bounds both memory and how small files get")
	f.String("checkpoint", "", "checkpoint file (default .dynafold/<table>.export.checkpoint.json)")
	f.Duration("checkpoint-every", time.Second, "how often the checkpoint is saved (each save is one small file write)")
	f.Bool("restart", false, "discard the checkpoint and the destination's files, and start over")
	f.Bool("force", false, "resume a checkpoint made with a different mapping")
	f.String("reject-file", "", "JSON-lines file for rows rejected by on_error: reject (default .dynafold/<table>.rejects.jsonl)")
	f.Int64("max-rejects", -1, "stop after more than N rows are skipped or rejected (-1: no limit)")
	f.String("progress", "auto", "progress display: auto, tty, json or none")
	f.Duration("grace", 5*time.Second, "after a stop signal, how long open files may be finished")
	addServiceFlags(f)
	return cmd
}

// manifest is manifest.json: what an import needs to know and check.
type manifest struct {
	Version     int           `json:"version"`
	Table       string        `json:"table"`
	Format      string        `json:"input_format"`
	Compression string        `json:"compression"`
	DataPrefix  string        `json:"data_prefix"`
	Items       int64         `json:"items"`
	Bytes       int64         `json:"bytes"`
	Size        int64         `json:"size"`
	Files       []export.File `json:"files"`
	RunID       string        `json:"run_id"`
	Finished    time.Time     `json:"finished"`
}

// maxImportObjects is ImportTable's limit on the S3 objects of one import.
const maxImportObjects = 50_000

// exportDestination opens the destination --to names, once the run holds
// its checkpoint: a directory (its spools of an interrupted run removed),
// or an S3 prefix with a local spool, which drop removes (nil: none).
func (a *app) exportDestination(ctx context.Context, runID, scheme, bucket, prefix string) (dest export.Destination, drop func(), err error) {
	switch scheme {
	case "file":
		d, err := export.NewDir(prefix)
		if err != nil {
			return nil, nil, err
		}
		if err := d.RemoveSpools(); err != nil {
			return nil, nil, err
		}
		return d, nil, nil
	case "s3":
		client, err := export.NewS3Client(ctx, export.S3ClientOptions{Endpoint: a.v.GetString("s3-endpoint"), Region: a.v.GetString("s3-region"),
			AllowInsecure: a.v.GetBool("allow-insecure-endpoint")})
		if err != nil {
			return nil, nil, err
		}
		a.learnCredentials(ctx, client.Options().Credentials)
		spool := a.v.GetString("spool-dir")
		if spool == "" {
			spool = filepath.Join(os.TempDir(), "dynafold-export-"+runID)
		}
		if dest, err = export.NewS3(client, bucket, prefix, spool); err != nil {
			return nil, nil, err
		}
		return dest, func() { os.RemoveAll(spool) }, nil
	}
	return nil, nil, fmt.Errorf("--to: unknown scheme %q", scheme)
}

func (a *app) runExport(cmd *cobra.Command, _ []string) (err error) {
	ctx := cmd.Context()
	rep := a.newReport("export")
	defer func() { err = a.finishReport(rep, err) }()
	to := a.v.GetString("to")
	if to == "" {
		return usageError(errors.New("--to is required: file:///dir/ or s3://bucket/prefix/"))
	}
	scheme, bucket, prefix, err := export.Parse(to)
	if err != nil {
		return usageError(err)
	}
	readers, writers := a.v.GetInt("concurrency"), a.v.GetInt("writers")
	if err := a.checkExportFlags(readers, writers); err != nil {
		return usageError(err)
	}
	var dest export.Destination
	var dropSpool func()
	o, err := a.open(ctx, rep, preamble{conns: readers + 4, checkpoint: ".export.checkpoint.json", lint: true,
		prepare: func(*loaded) (err error) {
			dest, dropSpool, err = a.exportDestination(ctx, rep.RunID, scheme, bucket, prefix)
			return err
		},
		fingerprint: func() string { return " export " + dest.String() }})
	if dropSpool != nil {
		defer dropSpool()
	}
	if err != nil {
		return err
	}
	defer o.Close()
	src, plan, dsn, ckptPath, fingerprint := o.src, o.plan, o.dsn, o.checkpoint, rep.Fingerprint

	store := checkpoint.NewFileStore(ckptPath)
	if a.v.GetBool("restart") {
		if err := store.Discard(ctx); err != nil {
			return fmt.Errorf("discarding checkpoint: %w", err)
		}
		if err := clearDestination(ctx, dest); err != nil {
			return err
		}
	}
	meta := checkpoint.Meta{Fingerprint: fingerprint, Table: plan.Table.Name, Source: dsn.Identity(), RunID: rep.RunID}
	resumed, err := store.Open(ctx, meta, a.v.GetBool("force"))
	if err != nil {
		return err
	}
	if !resumed && !a.v.GetBool("restart") {
		m, err := finishedExport(ctx, dest, store.Saved(), fingerprint)
		if err != nil {
			return err
		}
		if m != nil {
			rep.Checkpoint = ckptPath
			fmt.Fprintf(a.console, "dynafold: the export to %s is already complete (run %s: %s items in %s files, finished %s); manifest %s. Nothing was written; --restart exports again\n",
				dest, m.RunID, render.Thousands(m.Items), render.Thousands(int64(len(m.Files))), m.Finished.Format(time.RFC3339), export.ManifestURL(dest))
			return nil
		}
	}
	var saved *export.State
	if resumed && store.SinkState() != nil {
		saved = &export.State{}
		if err := json.Unmarshal(store.SinkState(), saved); err != nil {
			return fmt.Errorf("checkpoint %s: export state: %w", ckptPath, err)
		}
	}
	if err := prepareDestination(ctx, dest, saved, a.v.GetBool("restart")); err != nil {
		return err
	}
	// One open file per writer, up to one per CPU: compression is what a
	// lane parallelizes, and every lane's file is committed at each
	// rotation, so more lanes than CPUs only make more, smaller files for
	// the same memory.
	lanes := min(writers, runtime.GOMAXPROCS(0))
	out := export.New(dest, saved, export.Options{Lanes: lanes, FileBytes: a.v.GetInt64("file-size"), MaxPendingBytes: a.v.GetInt64("max-pending-bytes"), Prefix: rep.RunID})
	defer out.Close()
	store.Attach(out.Snapshot)

	snap, err := src.Snapshot(ctx, source.SnapshotOptions{Readers: readers})
	if err != nil {
		return err
	}
	defer snap.Close()
	obs, err := a.observe(plan.Table.Name)
	if err != nil {
		return err
	}
	defer obs.close()
	progress, restore := a.progress()
	progress = obs.runProgress(progress, nil)
	opts := a.runOptions(readers, writers, dsn, a.rejectFile(plan.Table.Name), progress,
		func(si pipeline.StartInfo) { a.announceStart(store, ckptPath, si) })
	opts.MaxInFlight = a.v.GetInt64("max-in-flight")
	sum, runErr := pipeline.Run(ctx, pipeline.Job{
		Plan: plan, Snapshot: snap, Sink: out, Store: store, Force: a.v.GetBool("force"), Meta: meta,
	}, opts)
	restore()
	if progress != nil {
		progress.Close()
	}
	rep.Summary = sum
	rep.Checkpoint = ckptPath
	if sum != nil {
		a.printSummary(sum, ckptPath)
	}
	if runErr != nil {
		return runErr
	}
	files := out.Files()
	if len(files) > maxImportObjects {
		return fmt.Errorf("the export has %d files, more than ImportTable's %d objects per import: export again with a larger --max-in-flight or --file-size", len(files), maxImportObjects)
	}
	m := manifest{Version: 1, Table: plan.Table.Name, Format: "DYNAMODB_JSON", Compression: "GZIP", DataPrefix: export.DataDir, Files: files, RunID: rep.RunID, Finished: time.Now().UTC()}
	for _, f := range files {
		m.Items += f.Items
		m.Bytes += f.Bytes
		m.Size += f.Size
	}
	data, _ := json.MarshalIndent(m, "", "  ")
	if err := dest.PutManifest(ctx, append(data, '\n')); err != nil {
		return fmt.Errorf("writing the manifest: %w", err)
	}
	fmt.Fprintf(a.console, "dynafold: exported %s items in %s files (%s bytes of JSON, %s gzip) to %s\n",
		render.Thousands(m.Items), render.Thousands(int64(len(files))), render.Thousands(m.Bytes), render.Thousands(m.Size), dest)
	return sum.Rejections()
}

func (a *app) checkExportFlags(readers, writers int) error {
	switch {
	case a.v.GetInt64("max-in-flight") < 1:
		return fmt.Errorf("--max-in-flight must be at least 1, not %d", a.v.GetInt64("max-in-flight"))
	case a.v.GetInt64("file-size") < 1<<20:
		return fmt.Errorf("--file-size must be at least 1 MiB, not %d", a.v.GetInt64("file-size"))
	case a.v.GetInt64("max-pending-bytes") < 1<<20:
		return fmt.Errorf("--max-pending-bytes must be at least 1 MiB, not %d", a.v.GetInt64("max-pending-bytes"))
	}
	return a.checkRunFlags(readers, writers)
}

// finishedExport returns the manifest of the export the checkpoint records
// as complete when a rerun has nothing to do: the checkpoint's fingerprint
// is this run's (the same mapping, source and destination), and the
// destination holds exactly that export, its manifest written by the
// checkpoint's run and listing the files the checkpoint counts, with no
// other data file beside them. Otherwise it returns nil, and the run goes
// on as a new export (which refuses a destination holding files).
func finishedExport(ctx context.Context, dest export.Destination, saved *checkpoint.Saved, fingerprint string) (*manifest, error) {
	if saved == nil || !saved.Complete || saved.Meta.Fingerprint != fingerprint || saved.Sink == nil {
		return nil, nil
	}
	var st export.State
	if err := json.Unmarshal(saved.Sink, &st); err != nil {
		return nil, nil
	}
	data, err := dest.ReadManifest(ctx)
	if err != nil || data == nil {
		return nil, err
	}
	var m manifest
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
func prepareDestination(ctx context.Context, dest export.Destination, saved *export.State, restart bool) error {
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
			return usageError(fmt.Errorf("%s already holds an export (%d data files): use --restart to replace it, or another destination", dest, len(names)))
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
func clearDestination(ctx context.Context, dest export.Destination) error {
	if err := dest.RemoveManifest(ctx); err != nil {
		return err
	}
	names, err := dest.List(ctx)
	if err != nil {
		return err
	}
	return dest.Remove(ctx, names)
}
