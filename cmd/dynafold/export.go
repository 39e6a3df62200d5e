package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/export"
	"github.com/dynafold/dynafold/internal/render"
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

	pass, stopObs := a.observedPass(plan.Table.Name, readers, writers, dsn, nil)
	defer stopObs()
	out, err := export.Run(ctx, export.Job{
		Plan: plan, Source: src, Dest: dest, Checkpoint: ckptPath, Pass: pass,
		Meta:  checkpoint.Meta{Fingerprint: fingerprint, Table: plan.Table.Name, Source: dsn.Identity(), RunID: rep.RunID},
		Force: a.v.GetBool("force"), Restart: a.v.GetBool("restart"),
	}, export.RunOptions{Readers: readers, Writers: writers, FileBytes: a.v.GetInt64("file-size"),
		MaxPendingBytes: a.v.GetInt64("max-pending-bytes"), MaxInFlight: a.v.GetInt64("max-in-flight")})
	return a.reportExport(rep, ckptPath, dest, out, err)
}

// reportExport prints what export.Run did and maps it to the exit.
func (a *app) reportExport(rep *report, ckptPath string, dest export.Destination, out *export.Outcome, err error) error {
	var inUse *export.InUseError
	if errors.As(err, &inUse) {
		return usageError(err)
	}
	if out == nil {
		return err
	}
	rep.Checkpoint = ckptPath
	if m := out.Manifest; out.Complete {
		fmt.Fprintf(a.console, "dynafold: the export to %s is already complete (run %s: %s items in %s files, finished %s); manifest %s. Nothing was written; --restart exports again\n",
			dest, m.RunID, render.Thousands(m.Items), render.Thousands(int64(len(m.Files))), m.Finished.Format(time.RFC3339), export.ManifestURL(dest))
		return nil
	}
	rep.Summary = out.Summary
	if out.Summary != nil {
		a.printSummary(out.Summary, ckptPath)
	}
	if err != nil {
		return err
	}
	m := out.Manifest
	fmt.Fprintf(a.console, "dynafold: exported %s items in %s files (%s bytes of JSON, %s gzip) to %s\n",
		render.Thousands(m.Items), render.Thousands(int64(len(m.Files))), render.Thousands(m.Bytes), render.Thousands(m.Size), dest)
	return out.Summary.Rejections()
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
