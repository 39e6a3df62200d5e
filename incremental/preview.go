package incremental

import (
	"context"
	"fmt"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/verify"
)

// Preview is the report of diff --incremental and migrate --incremental
// --dry-run.
type Preview struct {
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
	// hard-deleted rows, moved keys); nil with NoDeletes.
	Sweep       *verify.Report `json:"sweep,omitempty"`
	WouldWrite  int64          `json:"items_to_write"`
	WouldDelete int64          `json:"items_to_delete"`
}

// PreviewOptions tune a preview.
type PreviewOptions struct {
	// Begin says where the state is; the preview is always a dry run.
	Begin BeginOptions
	// Compare are the comparer's options (verify.ModeDiff), Source set.
	Compare verify.Options
	// NoDeletes leaves out the key sweep.
	NoDeletes bool
}

// RunPreview shows what Run would change and writes nothing: not the
// table, not the checkpoint, not the state. The items of the changed rows
// are compared with the table (create, update, unchanged); the key sweep
// runs without deleting and counts what it would delete. The caller has
// Checked plan.
func RunPreview(ctx context.Context, src source.Source, plan *mapping.Plan, target verify.TargetAPI, o PreviewOptions) (*Preview, error) {
	bo := o.Begin
	bo.DryRun = true
	b, err := Begin(ctx, src, plan, bo)
	if err != nil {
		return nil, err
	}
	snap, err := src.Snapshot(ctx, source.SnapshotOptions{Readers: o.Compare.Readers})
	if err != nil {
		return nil, err
	}
	defer snap.Close()

	res := &Preview{Full: b.Pending.Full, Since: b.Pending.Since, Watermarks: b.Pending.Watermarks}
	if !res.Full {
		res.ReadInFull = b.ReadInFull
	}
	changesOpts := o.Compare
	changesOpts.NoSweep = !res.Full
	changes := b.Plan
	if !res.Full && !o.NoDeletes {
		changes = withNestCheck(b.Plan, plan, b.ReadInFull)
	}
	if res.Changes, err = verify.Run(ctx, verify.Input{Plan: changes, Snapshot: snap, Target: target}, changesOpts); err != nil {
		return nil, fmt.Errorf("comparing the changed rows' items: %w", err)
	}
	t := res.Changes.Totals
	res.WouldWrite = t.Create + t.Update
	if res.Full {
		res.WouldDelete = t.Stale
		return res, nil
	}
	if o.NoDeletes {
		return res, nil
	}
	sweepOpts := o.Compare
	sweepOpts.Mode, sweepOpts.DryRun, sweepOpts.KeyOnly = verify.ModePrune, true, true
	// With the last sweep's digests, only the collections whose keys
	// changed can hold stale items (the run also queries those it
	// writes, in case their rows changed between its reads).
	if !b.Resumed {
		prev, err := OpenDigests(b.DigestsPath, bo.Fingerprint)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			defer prev.Close()
			sweepOpts.Digests = &verify.Digests{Previous: prev}
		}
	}
	if res.Sweep, err = verify.Run(ctx, verify.Input{Plan: plan, Snapshot: snap, Target: target}, sweepOpts); err != nil {
		return nil, fmt.Errorf("sweeping for stale items: %w", err)
	}
	res.WouldDelete = res.Sweep.Totals.Stale
	return res, nil
}
