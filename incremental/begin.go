package incremental

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
)

// Watermarker reads a change column's largest value in the source's own
// clock; both drivers implement it.
type Watermarker interface {
	MaxText(ctx context.Context, table source.TableRef, column string) (string, bool, error)
}

// passes are the incremental run's own checkpoints, beside its state.
var passes = []string{"changes", "deletes", "nests"}

// Check refuses an incremental run the mapping or the flags cannot
// support, before anything is read: the errors are the operator's to fix.
func Check(plan *mapping.Plan, overlap time.Duration) error {
	if len(plan.Changes) == 0 {
		return errors.New("--incremental needs a changes: block in the mapping naming each table's change column, e.g. changes: {servers: {column: updated_at}}")
	}
	if overlap < 0 {
		return fmt.Errorf("--overlap must not be negative, not %s", overlap)
	}
	return nil
}

// BeginOptions say where a run's state is and how it starts.
type BeginOptions struct {
	// CheckpointPath is the full run's checkpoint; the state, the
	// digests and the passes' checkpoints sit beside it (PathFor).
	CheckpointPath string
	// Fingerprint is the mapping's (mapping.Plan.Fingerprint).
	Fingerprint string
	// Overlap is how far before the last watermark rows still count as
	// changed.
	Overlap time.Duration
	// Restart discards the state: the run reads everything.
	Restart bool
	// NoDeletes is set when the run skips its key sweep.
	NoDeletes bool
	// DryRun saves and discards nothing (a preview).
	DryRun bool
	Logger *slog.Logger
}

// Bounds are what one incremental run reads: the watermarks it records,
// the bound of each table, and the narrowed plan of its main pass.
type Bounds struct {
	// StatePath is the state file; DigestsPath the collection digests of
	// the last successful key sweep.
	StatePath   string
	DigestsPath string
	// Pending is the run's: whether it reads everything, its bounds and
	// the watermarks it records when it succeeds.
	Pending *Pending
	// Resumed is set when the run continues one that stopped, whose
	// writes the digests do not cover.
	Resumed bool
	// Plan is what the main pass reads; ReadInFull lists the entities it
	// reads in full because an incremental run cannot narrow them.
	Plan       *mapping.Plan
	ReadInFull []string
	// Fingerprint is the main pass's checkpoint fingerprint: the
	// mapping's and the bounds'.
	Fingerprint string

	state *State
	since mapping.Since
}

// Begin loads the state next to the checkpoint, reads the new watermarks
// (before the snapshot, so that a row committed after them is seen again
// next time) and narrows the plan. A rerun after a failure reuses the
// pending bounds, so that its checkpoint resumes. A dry run saves
// nothing. The caller has Checked plan.
func Begin(ctx context.Context, src source.Source, plan *mapping.Plan, o BeginOptions) (*Bounds, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	wm, ok := src.(Watermarker)
	if !ok {
		return nil, fmt.Errorf("the %T source cannot read watermarks", src)
	}
	b := &Bounds{StatePath: PathFor(o.CheckpointPath)}
	b.DigestsPath = DigestsFor(b.StatePath)
	st, err := Load(b.StatePath)
	if err != nil {
		return nil, err
	}
	switch {
	case o.Restart && !o.DryRun:
		if st != nil {
			log.Info("--restart: discarding incremental state; this run reads everything", "state", b.StatePath)
		}
		st = nil
		if err := DiscardDigests(b.DigestsPath); err != nil {
			return nil, err
		}
		if err := discardPasses(ctx, b.StatePath); err != nil {
			return nil, fmt.Errorf("discarding the incremental checkpoint: %w", err)
		}
	case st != nil && st.Fingerprint != o.Fingerprint:
		log.Warn("the mapping changed since the last incremental run; this run reads everything", "state", b.StatePath)
		st = nil
	}
	if st == nil {
		st = &State{Fingerprint: o.Fingerprint, Table: plan.Table.Name}
	}
	b.state = st
	if !o.DryRun && o.NoDeletes {
		// This run writes without a sweep: the digests no longer bound
		// what the table holds.
		if err := DiscardDigests(b.DigestsPath); err != nil {
			return nil, err
		}
	}
	if st.Pending != nil {
		b.Pending = st.Pending
		b.Resumed = true
		log.Info("resuming an unfinished incremental run", "started", st.Pending.Started)
	} else {
		p, err := newPending(ctx, wm, plan, st, o.Overlap)
		if err != nil {
			return nil, err
		}
		b.Pending = p
		if !o.DryRun {
			// The passes' checkpoints left by an earlier run are complete:
			// a new run starts its own.
			if err := discardPasses(ctx, b.StatePath); err != nil {
				return nil, fmt.Errorf("discarding the last incremental run's checkpoint: %w", err)
			}
			st.Pending = p
			if err := Save(b.StatePath, st); err != nil {
				return nil, err
			}
		}
	}
	b.narrow(plan, o.Fingerprint)
	return b, nil
}

// newPending reads the watermarks a new run records and its bounds: each
// table's last watermark minus the overlap, or none on a first run.
func newPending(ctx context.Context, wm Watermarker, plan *mapping.Plan, st *State, overlap time.Duration) (*Pending, error) {
	p := &Pending{Watermarks: map[string]string{}, Started: time.Now().UTC()}
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
		return p, nil
	}
	p.Since = map[string]string{}
	for t, w := range st.Watermarks {
		s, err := Subtract(w, overlap)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t, err)
		}
		p.Since[t] = s
	}
	return p, nil
}

// narrow sets the main pass's plan and its checkpoint fingerprint, which
// names the bounds so that a checkpoint of other bounds is not resumed.
func (b *Bounds) narrow(plan *mapping.Plan, fingerprint string) {
	h := sha256.New()
	fmt.Fprintf(h, "%s|incremental|full=%t", fingerprint, b.Pending.Full)
	b.since = mapping.Since{}
	if !b.Pending.Full {
		for _, ch := range sortedChanges(plan) {
			if s, ok := b.Pending.Since[ch.Table.String()]; ok {
				b.since[ch.Table] = s
				fmt.Fprintf(h, "|%s>%s", ch.Table, s)
			}
		}
		b.Plan, b.ReadInFull = plan.Changed(b.since)
	} else {
		b.Plan = plan
		for _, ep := range plan.Entities {
			b.ReadInFull = append(b.ReadInFull, ep.Name)
		}
	}
	b.Fingerprint = hex.EncodeToString(h.Sum(nil))[:16]
}

// discardPasses removes the passes' checkpoints.
func discardPasses(ctx context.Context, statePath string) error {
	for _, pass := range passes {
		if err := checkpoint.NewFileStore(CheckpointFor(statePath, pass)).Discard(ctx); err != nil {
			return err
		}
	}
	return nil
}

func sortedChanges(plan *mapping.Plan) []*mapping.ChangeColumns {
	out := make([]*mapping.ChangeColumns, 0, len(plan.Changes))
	for _, ch := range plan.Changes {
		out = append(out, ch)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table.String() < out[j].Table.String() })
	return out
}
