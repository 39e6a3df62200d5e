package main

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/incremental"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/verify"
)

// incrementalPreview is the report of diff --incremental and migrate
// --incremental --dry-run.
type incrementalPreview struct {
	// Full is set when there is no incremental state: the preview is a
	// full diff.
	Full  bool              `json:"full"`
	Since map[string]string `json:"since,omitempty"`
	// Watermarks are the ones the run would record.
	Watermarks map[string]string `json:"watermarks"`
	ReadInFull []string          `json:"entities_read_in_full,omitempty"`
	// Changes compares the items of the changed rows with the table.
	Changes *verify.Report `json:"changes"`
	// Sweep counts the stale items the key sweep would delete (soft- and
	// hard-deleted rows, moved keys); nil with --no-deletes.
	Sweep       *verify.Report `json:"sweep,omitempty"`
	WouldWrite  int64          `json:"items_to_write"`
	WouldDelete int64          `json:"items_to_delete"`
}

// runIncrementalPreview shows what migrate --incremental would change and
// writes nothing: not the table, not the checkpoint, not the state. The
// items of the changed rows are compared with the table (create, update,
// unchanged); the key sweep runs without deleting and counts what it would
// delete. Exit 3 when the run would change something.
func (a *app) runIncrementalPreview(cmd *cobra.Command, command string) (err error) {
	ctx, cancel := a.cancelOnStop(cmd.Context())
	defer cancel()
	rep := a.newReport(command)
	defer func() { err = a.finishReport(rep, err) }()

	opts, l, src, plan, err := a.openCompare(ctx, rep, verify.ModeDiff)
	if err != nil {
		return err
	}
	defer src.Close()
	dsn, _ := l.dsn()
	rep.Source = dsn.Identity()
	fingerprint := plan.Fingerprint(dsn.Identity())
	rep.Fingerprint = fingerprint
	opts.Source = dsn.Identity()

	client, err := a.dynamo(ctx, l, opts.Lookups)
	if err != nil {
		return err
	}
	if _, err := a.requireTable(ctx, client, plan.Table, l); err != nil {
		return err
	}
	ckptPath := a.v.GetString("checkpoint")
	if ckptPath == "" {
		ckptPath = filepath.Join(".dynafold", plan.Table.Name+".checkpoint.json")
	}
	if err := incremental.Check(plan, a.v.GetDuration("overlap")); err != nil {
		return usageError(err)
	}
	inc, err := incremental.Begin(ctx, src, plan, incremental.BeginOptions{
		CheckpointPath: ckptPath, Fingerprint: fingerprint, Overlap: a.v.GetDuration("overlap"), DryRun: true, Logger: a.log,
	})
	if err != nil {
		return err
	}
	snap, err := src.Snapshot(ctx, source.SnapshotOptions{Readers: opts.Readers})
	if err != nil {
		return err
	}
	defer snap.Close()

	res := &incrementalPreview{Full: inc.Pending.Full, Since: inc.Pending.Since, Watermarks: inc.Pending.Watermarks}
	if !res.Full {
		res.ReadInFull = inc.ReadInFull
	}
	changesOpts := opts
	changesOpts.NoSweep = !res.Full
	changes := inc.Plan
	if !res.Full && !a.v.GetBool("no-deletes") {
		changes = incremental.WithNestCheck(inc.Plan, plan, inc.ReadInFull)
	}
	if res.Changes, err = verify.Run(ctx, verify.Input{Plan: changes, Snapshot: snap, Target: client}, changesOpts); err != nil {
		return fmt.Errorf("comparing the changed rows' items: %w", err)
	}
	t := res.Changes.Totals
	res.WouldWrite = t.Create + t.Update
	if res.Full {
		res.WouldDelete = t.Stale
	} else if !a.v.GetBool("no-deletes") {
		sweepOpts := opts
		sweepOpts.Mode, sweepOpts.DryRun, sweepOpts.KeyOnly = verify.ModePrune, true, true
		// With the last sweep's digests, only the collections whose keys
		// changed can hold stale items (the run also queries those it
		// writes, in case their rows changed between its reads).
		if !inc.Resumed {
			prev, err := incremental.OpenDigests(inc.DigestsPath, fingerprint)
			if err != nil {
				return err
			}
			if prev != nil {
				defer prev.Close()
				sweepOpts.Digests = &verify.Digests{Previous: prev}
			}
		}
		if res.Sweep, err = verify.Run(ctx, verify.Input{Plan: plan, Snapshot: snap, Target: client}, sweepOpts); err != nil {
			return fmt.Errorf("sweeping for stale items: %w", err)
		}
		res.WouldDelete = res.Sweep.Totals.Stale
	}
	rep.Result = res
	if err := a.printPreview(res); err != nil {
		return err
	}
	if res.WouldWrite+res.WouldDelete > 0 {
		return &exitError{code: exitDifferences, err: differencesFound{res.Changes}}
	}
	return nil
}

func (a *app) printPreview(res *incrementalPreview) error {
	if a.v.GetString("output") == "json" {
		writeJSON(a.stdout, res)
		return nil
	}
	if err := a.writeComparison(res.Changes); err != nil {
		return err
	}
	kind := "incremental"
	if res.Full {
		kind = "full (no earlier incremental state)"
	}
	fmt.Fprintf(a.stdout, "\n%s run preview: %d items to write, %d items to delete\n", kind, res.WouldWrite, res.WouldDelete)
	if res.Sweep == nil && !res.Full {
		fmt.Fprintln(a.stdout, "key sweep left out (--no-deletes)")
	}
	tables := make([]string, 0, len(res.Since))
	for t := range res.Since {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		fmt.Fprintf(a.stdout, "since %s: %s\n", t, res.Since[t])
	}
	return nil
}
