package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/incremental"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/verify"
)

// runIncremental is migrate --incremental once the table and the source
// are open: incremental.Run with the flags, and its counts printed. The
// main pass shows progress and serves metrics as migrate's does.
func (a *app) runIncremental(ctx context.Context, rep *report, src source.Source, plan *mapping.Plan, client *dynamodb.Client, writer *sink.DynamoWriter, ckptPath string, dsn source.DSN, mainPass func(*checkpoint.FileStore) (pipeline.Options, func(), error)) error {
	if err := incremental.Check(plan, a.v.GetDuration("overlap")); err != nil {
		return usageError(err)
	}
	sweep, err := a.compareOptions(verify.ModePrune)
	if err != nil {
		return err
	}
	readers, writers := a.v.GetInt("concurrency"), a.v.GetInt("writers")
	out, err := incremental.Run(ctx, incremental.Job{
		Source: src, Plan: plan, Client: client, Writer: writer, Force: a.v.GetBool("force"),
		Meta:     checkpoint.Meta{Fingerprint: rep.Fingerprint, Table: plan.Table.Name, Source: dsn.Identity(), RunID: rep.RunID},
		MainPass: mainPass,
	}, incremental.Options{
		Begin: incremental.BeginOptions{
			CheckpointPath: ckptPath, Overlap: a.v.GetDuration("overlap"),
			Restart: a.v.GetBool("restart"), NoDeletes: a.v.GetBool("no-deletes"),
		},
		Readers: readers,
		Passes: pipeline.Options{
			Readers: readers, Writers: writers, PageSize: a.v.GetInt("page-size"),
			Grace: a.v.GetDuration("grace"), Stop: a.stop, Logger: a.log,
		},
		MaxWCU: a.v.GetFloat64("max-wcu"), FullSweep: a.v.GetBool("full-sweep"),
		Sweep: sweep, Logger: a.log,
	})
	if out.Checkpoint != "" {
		rep.Summary, rep.Checkpoint = out.Summary, out.Checkpoint
	}
	switch {
	case out.Result != nil:
		rep.Result = out.Result
		a.printIncremental(out.Summary, out.Result)
	case out.Summary != nil:
		a.printSummary(out.Summary, out.Checkpoint)
	}
	return err
}

// printIncremental prints the incremental run's counts after the summary.
func (a *app) printIncremental(sum *pipeline.Summary, res *incremental.Result) {
	if a.v.GetString("output") == "json" {
		writeJSON(a.stdout, struct {
			*pipeline.Summary
			Incremental *incremental.Result `json:"incremental"`
		}{sum, res})
		return
	}
	if sum != nil {
		a.printSummary(sum, incremental.CheckpointFor(res.State, "changes"))
	}
	kind := "incremental"
	if res.Full {
		kind = "full (no earlier incremental state)"
	}
	fmt.Fprintf(a.stdout, "%s run: %d rows re-derived, %d items written, %d items deleted (%d soft-deleted, %d by the key sweep)\n",
		kind, res.RowsRederived, res.ItemsWritten, res.ItemsDeleted, res.SoftDeleted, res.Swept)
	if res.NestChecked > 0 {
		fmt.Fprintf(a.stdout, "nest check: %d rows read, %d items compared, %d rewritten\n", res.NestRowsRead, res.NestChecked, res.NestRewritten)
	}
	if res.SweepSkipped {
		fmt.Fprintln(a.stdout, "key sweep and nest check skipped (--no-deletes): items of rows deleted or moved at the source remain")
	} else {
		fmt.Fprintf(a.stdout, "key sweep: %d source rows read (key columns only) making %d collections, %d stale items deleted\n", res.SweepRowsRead, res.Collections, res.Swept)
		if res.SweepMode == verify.SweepQuery {
			fmt.Fprintf(a.stdout, "key sweep: %d collections queried (%d changed or new, %d vanished, the rest written by this run), %d table keys read\n", res.CollectionsQueried, res.CollectionsChanged, res.CollectionsVanished, res.TargetKeysRead)
		} else {
			fmt.Fprintf(a.stdout, "key sweep: %d table keys scanned (%s)\n", res.SweepKeysScanned, res.SweepScanReason)
		}
	}
	for _, e := range res.ReadInFull {
		if !res.Full {
			fmt.Fprintf(a.stdout, "entity %s was read in full\n", e)
		}
	}
	tables := make([]string, 0, len(res.Watermarks))
	for t := range res.Watermarks {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		fmt.Fprintf(a.stdout, "watermark %s: %s\n", t, res.Watermarks[t])
	}
	fmt.Fprintf(a.stdout, "incremental state: %s\n", res.State)
}
