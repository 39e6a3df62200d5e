package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/incremental"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/sink"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/verify"
)

// watermarker reads a change column's largest value in the source's own
// clock; both drivers implement it.
type watermarker interface {
	MaxText(ctx context.Context, table source.TableRef, column string) (string, bool, error)
}

// incrementalRun is one migrate --incremental: its bounds, the narrowed
// plan the pipeline reads, and the state to commit when it succeeds.
type incrementalRun struct {
	statePath string
	state     *incremental.State
	pending   *incremental.Pending
	since     mapping.Since
	// plan is what the main pass reads; full lists the entities it reads
	// in full because an incremental run cannot narrow them.
	plan        *mapping.Plan
	full        []string
	store       checkpoint.Store
	storePath   string
	fingerprint string
	// softDeleted counts the items of soft-deleted rows deleted.
	softDeleted int64
	// digestsPath is the collection digests of the last successful key
	// sweep; resumed is set when this run continues one that stopped, whose
	// writes the digests do not cover. trackers remember the collections
	// this run's passes wrote.
	digestsPath string
	resumed     bool
	trackers    []*incremental.Tracker
}

// track wraps a sink of this run's writes, so that the key sweep queries
// the collections they touched.
func (r *incrementalRun) track(s sink.Sink, table *mapping.TableSchema) sink.Sink {
	t := incremental.NewTracker(s, table)
	r.trackers = append(r.trackers, t)
	return t
}

// written returns the partition keys this run wrote; ok is false when a
// tracker overflowed.
func (r *incrementalRun) written() ([]types.AttributeValue, bool) {
	var out []types.AttributeValue
	for _, t := range r.trackers {
		pks, ok := t.Written()
		if !ok {
			return nil, false
		}
		out = append(out, pks...)
	}
	return out, true
}

// incrementalResult is the report of an incremental run.
type incrementalResult struct {
	// Full is set on a run without earlier state: everything was read.
	Full          bool  `json:"full"`
	RowsRederived int64 `json:"rows_rederived"`
	ItemsWritten  int64 `json:"items_written"`
	// NestChecked and NestRewritten are the nest check's: items of
	// nest-bearing entities compared with the table, and those that
	// differed and were written (included in ItemsWritten).
	NestRowsRead  int64 `json:"rows_read_nest_check"`
	NestChecked   int64 `json:"items_compared_nest_check"`
	NestRewritten int64 `json:"items_written_nest_check"`
	// SweepRowsRead and SweepKeysScanned are what the key sweep read: the
	// source rows (key columns only) and the table's keys.
	SweepRowsRead    int64 `json:"rows_read_sweep"`
	SweepKeysScanned int64 `json:"target_keys_scanned"`
	// SweepMode is "scan" (every key of the table read) or "query" (only
	// the collections whose key digest changed, that appeared, vanished or
	// were written); CollectionsQueried and TargetKeysRead are what it
	// read; Collections is how many collections the source makes, and
	// CollectionsChanged and CollectionsVanished are the digest
	// comparison's (a query sweep's).
	SweepMode           string `json:"sweep_mode,omitempty"`
	CollectionsQueried  int64  `json:"collections_queried"`
	TargetKeysRead      int64  `json:"target_keys_read"`
	Collections         int64  `json:"collections"`
	CollectionsChanged  int64  `json:"collections_changed"`
	CollectionsVanished int64  `json:"collections_vanished"`
	// SweepScanReason says why a sweep scanned the table rather than
	// querying the changed collections.
	SweepScanReason string   `json:"sweep_scan_reason,omitempty"`
	ItemsDeleted    int64    `json:"items_deleted"`
	SoftDeleted     int64    `json:"items_deleted_soft"`
	Swept           int64    `json:"items_deleted_sweep"`
	SweepSkipped    bool     `json:"sweep_skipped,omitempty"`
	ReadInFull      []string `json:"entities_read_in_full,omitempty"`
	// Since is the bound of each table (previous watermark minus the
	// overlap); Watermarks the ones recorded for the next run.
	Since      map[string]string `json:"since,omitempty"`
	Watermarks map[string]string `json:"watermarks"`
	State      string            `json:"state"`
	Prune      *verify.Report    `json:"sweep,omitempty"`
}

// beginIncremental loads the state next to the checkpoint, reads the new
// watermarks (before the snapshot, so that a row committed after them is
// seen again next time) and narrows the plan. A rerun after a failure
// reuses the pending bounds, so that its checkpoint resumes. A preview
// (dry) saves nothing.
func (a *app) beginIncremental(ctx context.Context, src source.Source, plan *mapping.Plan, ckptPath, fingerprint string, dry bool) (*incrementalRun, error) {
	if len(plan.Changes) == 0 {
		return nil, usageError(errors.New("--incremental needs a changes: block in the mapping naming each table's change column, e.g. changes: {servers: {column: updated_at}}"))
	}
	overlap := a.v.GetDuration("overlap")
	if overlap < 0 {
		return nil, usageError(fmt.Errorf("--overlap must not be negative, not %s", overlap))
	}
	wm, ok := src.(watermarker)
	if !ok {
		return nil, fmt.Errorf("the %T source cannot read watermarks", src)
	}
	r := &incrementalRun{statePath: incremental.PathFor(ckptPath)}
	r.digestsPath = incremental.DigestsFor(r.statePath)
	st, err := incremental.Load(r.statePath)
	if err != nil {
		return nil, err
	}
	switch {
	case a.v.GetBool("restart") && !dry:
		if st != nil {
			a.log.Info("--restart: discarding incremental state; this run reads everything", "state", r.statePath)
		}
		st = nil
		if err := incremental.DiscardDigests(r.digestsPath); err != nil {
			return nil, err
		}
		for _, pass := range []string{"changes", "deletes", "nests"} {
			if err := checkpoint.NewFileStore(incremental.CheckpointFor(r.statePath, pass)).Discard(ctx); err != nil {
				return nil, fmt.Errorf("discarding the incremental checkpoint: %w", err)
			}
		}
	case st != nil && st.Fingerprint != fingerprint:
		a.log.Warn("the mapping changed since the last incremental run; this run reads everything", "state", r.statePath)
		st = nil
	}
	if st == nil {
		st = &incremental.State{Fingerprint: fingerprint, Table: plan.Table.Name}
	}
	r.state = st
	if !dry && a.v.GetBool("no-deletes") {
		// This run writes without a sweep: the digests no longer bound
		// what the table holds.
		if err := incremental.DiscardDigests(r.digestsPath); err != nil {
			return nil, err
		}
	}
	if st.Pending != nil {
		r.pending = st.Pending
		r.resumed = true
		a.log.Info("resuming an unfinished incremental run", "started", st.Pending.Started)
	} else {
		p := &incremental.Pending{Watermarks: map[string]string{}, Started: time.Now().UTC()}
		for _, ch := range sortedChanges(plan) {
			w, ok, err := wm.MaxText(ctx, ch.Table, ch.Column)
			if err != nil {
				return nil, err
			}
			if ok {
				p.Watermarks[ch.Table.String()] = w
			}
		}
		if st.Completed.IsZero() {
			p.Full = true
		} else {
			p.Since = map[string]string{}
			for t, w := range st.Watermarks {
				s, err := incremental.Subtract(w, overlap)
				if err != nil {
					return nil, fmt.Errorf("table %s: %w", t, err)
				}
				p.Since[t] = s
			}
		}
		r.pending = p
		if !dry {
			// The passes' checkpoints left by an earlier run are complete:
			// a new run starts its own.
			for _, pass := range []string{"changes", "deletes", "nests"} {
				if err := checkpoint.NewFileStore(incremental.CheckpointFor(r.statePath, pass)).Discard(ctx); err != nil {
					return nil, fmt.Errorf("discarding the last incremental run's checkpoint: %w", err)
				}
			}
			st.Pending = p
			if err := incremental.Save(r.statePath, st); err != nil {
				return nil, err
			}
		}
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s|incremental|full=%t", fingerprint, r.pending.Full)
	r.since = mapping.Since{}
	if !r.pending.Full {
		for _, ch := range sortedChanges(plan) {
			if s, ok := r.pending.Since[ch.Table.String()]; ok {
				r.since[ch.Table] = s
				fmt.Fprintf(h, "|%s>%s", ch.Table, s)
			}
		}
		r.plan, r.full = plan.Changed(r.since)
	} else {
		r.plan = plan
		for _, ep := range plan.Entities {
			r.full = append(r.full, ep.Name)
		}
	}
	r.fingerprint = hex.EncodeToString(h.Sum(nil))[:16]
	r.storePath = incremental.CheckpointFor(r.statePath, "changes")
	r.store = checkpoint.NewFileStore(r.storePath)
	return r, nil
}

func sortedChanges(plan *mapping.Plan) []*mapping.ChangeColumns {
	out := make([]*mapping.ChangeColumns, 0, len(plan.Changes))
	for _, ch := range plan.Changes {
		out = append(out, ch)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table.String() < out[j].Table.String() })
	return out
}

// deleteSoftDeleted deletes the items of the rows soft-deleted since the
// bound (all soft-deleted rows on a full run). It runs before the main pass,
// so that a live row whose item has the same key as a soft-deleted one's
// gets its item back from the main pass when it changed too.
func (a *app) deleteSoftDeleted(ctx context.Context, r *incrementalRun, plan *mapping.Plan, snap source.Snapshot, client *dynamodb.Client, meta checkpoint.Meta) error {
	since := r.since
	if r.pending.Full {
		since = nil
	}
	sd := plan.SoftDeleted(since)
	if sd == nil {
		return nil
	}
	del := incremental.NewDeleteSink(sink.NewDeleter(client, plan.Table.Name), plan.Table)
	meta.Fingerprint = r.fingerprint + "-deletes"
	_, err := pipeline.Run(ctx, pipeline.Job{
		Plan: sd, Snapshot: snap, Sink: del,
		Store: checkpoint.NewFileStore(incremental.CheckpointFor(r.statePath, "deletes")), Meta: meta,
	}, pipeline.Options{
		Readers: a.v.GetInt("concurrency"), Writers: a.v.GetInt("writers"), PageSize: a.v.GetInt("page-size"),
		Grace: a.v.GetDuration("grace"), Stop: a.stop, Logger: a.log,
	})
	r.softDeleted = del.Deleted()
	if err != nil {
		return fmt.Errorf("deleting the items of soft-deleted rows (%d deleted): %w", r.softDeleted, err)
	}
	return nil
}

// finishIncremental runs the key sweep after the main pass succeeded
// (unless --no-deletes) and only then moves the watermarks.
func (a *app) finishIncremental(ctx context.Context, r *incrementalRun, plan *mapping.Plan, snap source.Snapshot, client *dynamodb.Client, sum *pipeline.Summary, meta checkpoint.Meta) (*incrementalResult, error) {
	res := &incrementalResult{Full: r.pending.Full, ReadInFull: r.full, Since: r.pending.Since, Watermarks: r.pending.Watermarks, State: r.statePath}
	if sum != nil {
		res.RowsRederived = sum.Total.RowsRead
		res.ItemsWritten = sum.Total.ItemsWritten
	}
	res.SoftDeleted = r.softDeleted
	if a.v.GetBool("no-deletes") {
		res.SweepSkipped = true
	} else {
		if !r.pending.Full {
			if err := a.checkNests(ctx, r, plan, snap, client, meta, res); err != nil {
				return res, err
			}
		}
		pruned, err := a.sweepKeys(ctx, r, plan, snap, client, meta.Source, res)
		if pruned != nil {
			res.Prune = pruned
			res.Swept = pruned.Deleted
			res.SweepRowsRead = pruned.Totals.RowsSeen
			res.SweepKeysScanned = pruned.KeysScanned
			res.SweepMode = pruned.SweepMode
			res.CollectionsQueried = pruned.CollectionsQueried
			res.TargetKeysRead = pruned.TargetKeysRead
			res.Collections = pruned.Collections
			res.CollectionsChanged = pruned.CollectionsChanged
			res.CollectionsVanished = pruned.CollectionsVanished
		}
		if err != nil {
			return res, err
		}
	}
	res.ItemsDeleted = res.SoftDeleted + res.Swept
	r.state.Watermarks = r.pending.Watermarks
	r.state.Completed = time.Now().UTC()
	r.state.Pending = nil
	if err := incremental.Save(r.statePath, r.state); err != nil {
		return res, err
	}
	return res, nil
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

// checkNests is the nest check (see incremental.CompareSink): it reads the
// nest-bearing entities in full, with their children, and writes the items
// that differ from the table: those of parents a nested child left (moved
// away or hard-deleted) without stamping them. It has its own checkpoint,
// so that an interrupted run resumes it.
func (a *app) checkNests(ctx context.Context, r *incrementalRun, plan *mapping.Plan, snap source.Snapshot, client *dynamodb.Client, meta checkpoint.Meta, res *incrementalResult) error {
	np := nestBearing(plan, r.full)
	if np == nil {
		return nil
	}
	writer := sink.NewDynamoWriter(sink.NewReachGuard(client), plan.Table, sink.WriterOptions{Rate: sink.NewAdaptiveRate(a.v.GetFloat64("max-wcu"))})
	cmp := incremental.NewCompareSink(client, plan.Table, r.track(writer, plan.Table))
	meta.Fingerprint = r.fingerprint + "-nests"
	sum, err := pipeline.Run(ctx, pipeline.Job{
		Plan: np, Snapshot: snap, Sink: cmp,
		Store: checkpoint.NewFileStore(incremental.CheckpointFor(r.statePath, "nests")), Meta: meta,
	}, pipeline.Options{
		Readers: a.v.GetInt("concurrency"), Writers: a.v.GetInt("writers"), PageSize: a.v.GetInt("page-size"),
		Grace: a.v.GetDuration("grace"), Stop: a.stop, Logger: a.log,
	})
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
// finishIncremental then saves the state.
func (a *app) sweepKeys(ctx context.Context, r *incrementalRun, plan *mapping.Plan, snap source.Snapshot, client *dynamodb.Client, sourceID string, res *incrementalResult) (*verify.Report, error) {
	opts, err := a.compareOptions(verify.ModePrune)
	if err != nil {
		return nil, err
	}
	opts.Source = sourceID
	opts.KeyOnly = true
	opts.Delete = sink.NewDeleter(client, plan.Table.Name)
	digestFP := plan.Fingerprint(sourceID)
	next, err := incremental.CreateDigests(r.digestsPath, digestFP)
	if err != nil {
		return nil, err
	}
	defer next.Abort()
	opts.Digests = &verify.Digests{Next: next}
	written, tracked := r.written()
	switch {
	case r.pending.Full:
		res.SweepScanReason = "a full run"
	case r.resumed:
		res.SweepScanReason = "the run resumes one that stopped, whose writes the digests do not cover"
	case a.v.GetBool("full-sweep"):
		res.SweepScanReason = "--full-sweep"
	case !tracked:
		res.SweepScanReason = fmt.Sprintf("the run wrote more than %d collections", incremental.MaxTracked)
	default:
		prev, err := incremental.OpenDigests(r.digestsPath, digestFP)
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
		a.log.Info("the key sweep scans every key of the table", "reason", res.SweepScanReason)
	}
	rep, err := verify.Run(ctx, verify.Input{Plan: plan, Snapshot: snap, Target: client}, opts)
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

// printIncremental prints the incremental run's counts after the summary.
func (a *app) printIncremental(sum *pipeline.Summary, res *incrementalResult) {
	if a.v.GetString("output") == "json" {
		writeJSON(a.stdout, struct {
			*pipeline.Summary
			Incremental *incrementalResult `json:"incremental"`
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

// endIncremental finishes an incremental run after its main pass: the
// delete passes and the watermarks only when the pass succeeded without
// rejected rows.
func (a *app) endIncremental(ctx context.Context, rep *report, r *incrementalRun, plan *mapping.Plan, snap source.Snapshot, client *dynamodb.Client, sum *pipeline.Summary, meta checkpoint.Meta, runErr error) error {
	if runErr != nil {
		if sum != nil {
			a.printSummary(sum, r.storePath)
		}
		return runErr
	}
	if n := sum.Total.Rejected + sum.Total.Skipped; n > 0 {
		a.printSummary(sum, r.storePath)
		return &exitError{code: exitRejected, err: fmt.Errorf("finished with %d rejected and %d skipped rows; the watermarks were not moved, and the next incremental run covers the same changes", sum.Total.Rejected, sum.Total.Skipped)}
	}
	res, err := a.finishIncremental(ctx, r, plan, snap, client, sum, meta)
	if res != nil {
		rep.Result = res
		a.printIncremental(sum, res)
	}
	return err
}
