package incremental

import (
	"context"
	"fmt"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/verify"
)

// deleteSoftDeleted deletes the items of the rows soft-deleted since the
// bound (all soft-deleted rows on a full run). It runs before the main pass,
// so that a live row whose item has the same key as a soft-deleted one's
// gets its item back from the main pass when it changed too.
func (r *run) deleteSoftDeleted(ctx context.Context, meta checkpoint.Meta) error {
	since := r.since
	if r.Pending.Full {
		since = nil
	}
	plan := r.job.Plan
	sd := plan.SoftDeleted(since)
	if sd == nil {
		return nil
	}
	del := NewDeleteSink(sink.NewDeleter(r.job.Client, plan.Table.Name), plan.Table)
	meta.Fingerprint += "-deletes"
	_, err := pipeline.Run(ctx, pipeline.Job{
		Plan: sd, Snapshot: r.snap, Sink: del,
		Store: checkpoint.NewFileStore(CheckpointFor(r.StatePath, "deletes")), Meta: meta,
	}, r.opts.Passes)
	r.softDeleted = del.Deleted()
	if err != nil {
		return fmt.Errorf("deleting the items of soft-deleted rows (%d deleted): %w", r.softDeleted, err)
	}
	return nil
}

// nestBearing returns the plan of the entities that nest children and
// that the run narrowed (an entity read in full is rewritten anyway), or
// nil when there are none.
func nestBearing(plan *mapping.Plan, full []string) *mapping.Plan {
	inFull := map[string]bool{}
	for _, e := range full {
		inFull[e] = true
	}
	out := *plan
	out.Entities = nil
	for _, ep := range plan.Entities {
		if len(ep.Nests()) > 0 && !inFull[ep.Name] {
			out.Entities = append(out.Entities, ep)
		}
	}
	if len(out.Entities) == 0 {
		return nil
	}
	return &out
}

// withNestCheck returns the narrowed plan with each nest-bearing entity
// read in full, as the run's nest check reads it: a preview then counts
// the parents a nested child left among the items to write.
func withNestCheck(narrowed, plan *mapping.Plan, full []string) *mapping.Plan {
	nb := nestBearing(plan, full)
	if nb == nil {
		return narrowed
	}
	whole := map[string]*mapping.EntityPlan{}
	for _, ep := range nb.Entities {
		whole[ep.Name] = ep
	}
	out := *narrowed
	out.Entities = nil
	for _, ep := range narrowed.Entities {
		if w, ok := whole[ep.Name]; ok {
			ep = w
		}
		out.Entities = append(out.Entities, ep)
	}
	return &out
}

// checkNests is the nest check (see CompareSink): it reads the
// nest-bearing entities in full, with their children, and writes the items
// that differ from the table: those of parents a nested child left (moved
// away or hard-deleted) without stamping them. It has its own checkpoint,
// so that an interrupted run resumes it.
func (r *run) checkNests(ctx context.Context, meta checkpoint.Meta, res *Result) error {
	plan := r.job.Plan
	np := nestBearing(plan, r.ReadInFull)
	if np == nil {
		return nil
	}
	writer := sink.NewDynamoWriter(sink.NewReachGuard(r.job.Client), plan.Table, sink.WriterOptions{Rate: sink.NewAdaptiveRate(r.opts.MaxWCU)})
	cmp := NewCompareSink(r.job.Client, plan.Table, r.track(writer))
	meta.Fingerprint += "-nests"
	sum, err := pipeline.Run(ctx, pipeline.Job{
		Plan: np, Snapshot: r.snap, Sink: cmp,
		Store: checkpoint.NewFileStore(CheckpointFor(r.StatePath, "nests")), Meta: meta,
	}, r.opts.Passes)
	res.NestChecked, res.NestRewritten = cmp.Compared(), cmp.Rewritten()
	res.ItemsWritten += res.NestRewritten
	if sum != nil {
		res.NestRowsRead = sum.Total.RowsRead
	}
	if err != nil {
		return fmt.Errorf("checking the items of nest-bearing entities (%d rewritten): %w", res.NestRewritten, err)
	}
	if n := sum.Total.Rejected + sum.Total.Skipped; n > 0 {
		return fmt.Errorf("checking the items of nest-bearing entities: %d rows rejected or skipped; the watermarks were not moved", n)
	}
	return nil
}

// sweepKeys is the key sweep: verify's stale detection, key-only on both
// sides, deleting the items no row produces: those of rows hard-deleted at
// the source, of moved keys, and of collections left without any row. The
// source's key columns are read in full; of the table, only the
// collections whose digest (verify.Digests) changed since the last
// successful sweep, that appeared or vanished, or that this run wrote are
// queried. Without usable digests the whole table's keys are scanned. The
// new digests are kept (atomic rename) only when the sweep succeeds;
// finish then saves the state.
func (r *run) sweepKeys(ctx context.Context, res *Result) (*verify.Report, error) {
	plan, sourceID := r.job.Plan, r.job.Meta.Source
	opts := r.opts.Sweep
	opts.Source = sourceID
	opts.KeyOnly = true
	opts.Delete = sink.NewDeleter(r.job.Client, plan.Table.Name)
	digestFP := plan.Fingerprint(sourceID)
	next, err := CreateDigests(r.DigestsPath, digestFP)
	if err != nil {
		return nil, err
	}
	defer next.Abort()
	opts.Digests = &verify.Digests{Next: next}
	written, tracked := r.written()
	switch {
	case r.Pending.Full:
		res.SweepScanReason = "a full run"
	case r.Resumed:
		res.SweepScanReason = "the run resumes one that stopped, whose writes the digests do not cover"
	case r.opts.FullSweep:
		res.SweepScanReason = "--full-sweep"
	case !tracked:
		res.SweepScanReason = fmt.Sprintf("the run wrote more than %d collections", MaxTracked)
	default:
		prev, err := OpenDigests(r.DigestsPath, digestFP)
		if err != nil {
			return nil, err
		}
		if prev == nil {
			res.SweepScanReason = "no collection digests from a last successful sweep under this mapping"
			break
		}
		defer prev.Close()
		opts.Digests.Previous, opts.Digests.Written = prev, written
	}
	if res.SweepScanReason != "" {
		r.log.Info("the key sweep scans every key of the table", "reason", res.SweepScanReason)
	}
	rep, err := verify.Run(ctx, verify.Input{Plan: plan, Snapshot: r.snap, Target: r.job.Client}, opts)
	if err == nil {
		err = next.Commit()
	}
	if err != nil {
		if rep != nil {
			return rep, fmt.Errorf("sweeping for stale items (%d deleted before the failure): %w", rep.Deleted, err)
		}
		return nil, fmt.Errorf("sweeping for stale items: %w", err)
	}
	return rep, nil
}
