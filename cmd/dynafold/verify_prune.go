package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/verify"
)

// prune is migrate --prune: after a migration that finished with every row
// written, it sweeps the table (or, with --sweep collections, the
// collections the rows produce) and deletes the items that look like the
// mapping's but that no row produces. It reads the migration's own
// snapshot, so "produced by no row" means by none of the rows just
// written. It returns nil when it did not prune.
func (a *app) prune(ctx context.Context, plan *mapping.Plan, snap source.Snapshot, client *dynamodb.Client, sum *pipeline.Summary, sourceID string) (*verify.Report, error) {
	if n := sum.Total.Rejected + sum.Total.Skipped; n > 0 {
		// A rejected row's old item would look stale: deleting it would
		// lose data the operator may still need.
		fmt.Fprintf(a.stderr, "dynafold: not pruning: %d rows were rejected or skipped, and their items in the table would look stale\n", n)
		return nil, nil
	}
	opts, err := a.compareOptions(verify.ModePrune)
	if err != nil {
		return nil, err
	}
	opts.Source = sourceID
	opts.Delete = sink.NewDeleter(client, plan.Table.Name)
	res, err := verify.Run(ctx, verify.Input{Plan: plan, Snapshot: snap, Target: client}, opts)
	if err != nil {
		if res != nil {
			return res, fmt.Errorf("pruning stale items (%d deleted before the failure): %w", res.Deleted, err)
		}
		return nil, fmt.Errorf("pruning stale items: %w", err)
	}
	return res, nil
}

// printMigrateResult prints the migration summary and, after --prune, what
// was pruned: one JSON document with a "prune" member, or the prune report
// after the summary.
func (a *app) printMigrateResult(sum *pipeline.Summary, checkpointPath string, pruned *verify.Report) {
	if pruned == nil {
		a.printSummary(sum, checkpointPath)
		return
	}
	if a.v.GetString("output") == "json" {
		writeJSON(a.stdout, struct {
			*pipeline.Summary
			Prune *verify.Report `json:"prune"`
		}{sum, pruned})
		return
	}
	a.printSummary(sum, checkpointPath)
	fmt.Fprintln(a.stdout)
	if err := a.writeComparison(pruned); err != nil {
		a.log.Warn("printing the prune report failed", "error", err)
	}
}

// pruneAll is the sweep of a sync's resnapshot: the table sweep of
// verify, diff and migrate --prune (a Scan of every key), key-only on the
// source side too, deleting every item no row of the source as it is now
// produces, those of collections no row makes any more included. It
// returns how many items it deleted.
func (a *app) pruneAll(ctx context.Context, src source.Source, plan *mapping.Plan, client *dynamodb.Client, readers int, sourceID string) (int64, error) {
	snap, err := src.Snapshot(ctx, source.SnapshotOptions{Readers: readers})
	if err != nil {
		return 0, err
	}
	defer snap.Close()
	opts := verify.Options{Mode: verify.ModePrune, KeyOnly: true, Readers: readers, Examples: -1, Logger: a.log, Source: sourceID,
		Delete: sink.NewDeleter(client, plan.Table.Name)}
	res, err := verify.Run(ctx, verify.Input{Plan: plan, Snapshot: snap, Target: client}, opts)
	if res == nil {
		return 0, err
	}
	return res.Deleted, err
}
