package verify

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
)

// TargetAPI is the part of the DynamoDB client the comparer reads with:
// BatchGetItem for the lookups, Scan for a table sweep, Query for a
// collections or digest sweep and a table sweep's examples. Tests
// substitute fakes that drop keys or fail.
type TargetAPI interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	Scan(ctx context.Context, in *dynamodb.ScanInput, opts ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
}

// Input is what a comparison reads: the compiled mapping, a snapshot of
// the source and the target table.
type Input struct {
	Plan     *mapping.Plan
	Snapshot source.Snapshot
	Target   TargetAPI
}

// comparer is one comparison's state.
type comparer struct {
	in     Input
	opts   Options
	table  string
	keys   keySchema
	owners *owners
	sample sampler
	tally  *tally
	// expected holds the key of every item the source makes; touched the
	// partition keys of the sampled rows' items, for a collections sweep
	// (nil when every row is checked, or the sweep is another).
	expected *sorter
	touched  *sorter
	// swept counts collections swept, deleted stale items deleted.
	swept, deleted atomic.Int64
	// sweep is the sweep that ran; others counts items the mapping does
	// not recognise, outside items of filtered entities in collections no
	// row makes; spilled counts keys written to temporary files by the
	// sorters the sweeps own; units the sweep's read capacity.
	sweep           Sweep
	others, outside atomic.Int64
	spilled         atomic.Int64
	units           readUnits
	// reads are the entity plans the check reads (key-only copies in a
	// key sweep, where keyOnly says which are); scanned counts the target
	// keys the key sweep read.
	reads   []*mapping.EntityPlan
	keyOnly []bool
	scanned atomic.Int64
	// A digest sweep's counts: the collections the source makes, those
	// whose digest changed or that appeared, those that vanished, and the
	// target keys its queries read.
	collections, changed, vanished, read atomic.Int64
}

// Run compares the source with the target as opts.Mode says and returns
// the report. In ModePrune stale items are deleted through opts.Delete as
// they are found; when a prune fails part way, the report returned with the
// error counts what was deleted.
func Run(ctx context.Context, in Input, opts Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.defaults()
	start := time.Now()
	c := &comparer{
		in:       in,
		opts:     opts,
		table:    in.Plan.Table.Name,
		keys:     newKeySchema(in.Plan.Table),
		owners:   newOwners(in.Plan),
		sample:   newSampler(opts.Sample, opts.Seed),
		tally:    newTally(in.Plan, opts.Examples),
		expected: newSorter(opts.TempDir, "expected", opts.SpillBytes),
	}
	c.reads = in.Plan.Entities
	if opts.KeyOnly {
		c.reads, c.keyOnly = keyOnlyPlans(in.Plan)
	}
	if !c.sample.all && opts.Sweep == SweepCollections && !opts.NoSweep {
		c.touched = newSorter(opts.TempDir, "touched", opts.SpillBytes)
		defer c.touched.close()
	}
	defer c.expected.close()

	if err := c.check(ctx); err != nil {
		return nil, err
	}
	if n := c.tally.rowErrorCount(); opts.Mode == ModePrune && n > 0 {
		return nil, fmt.Errorf("not pruning: %d source rows cannot become items, so their items in the table would look stale", n)
	}
	var err error
	switch {
	case opts.NoSweep:
		c.sweep = SweepNone
	case opts.KeyOnly && opts.Digests != nil && opts.Digests.Previous != nil:
		c.sweep = SweepDigests
	case opts.Sweep == SweepCollections:
		c.sweep = SweepCollections
	default:
		c.sweep = SweepTable
	}
	opts.Logger.Debug("checked items; sweeping", "mode", opts.Mode, "sweep", c.sweep, "spilled_keys", c.expected.spilled)
	switch c.sweep {
	case SweepDigests:
		err = c.digestSweep(ctx)
	case SweepCollections:
		err = c.sweepCollections(ctx)
	case SweepTable:
		err = c.tableSweep(ctx)
	}
	rep := c.report(time.Since(start))
	if err != nil {
		if opts.Mode == ModePrune {
			return rep, err
		}
		return nil, err
	}
	return rep, nil
}

func (c *comparer) report(took time.Duration) *Report {
	t := c.in.Plan.Table
	r := &Report{
		SchemaVersion:    SchemaVersion,
		Command:          c.opts.Mode,
		Table:            t.Name,
		KeySchema:        KeySchema{PK: KeyAttribute{Name: t.PK.Name, Type: string(t.PK.Type)}, TypeAttribute: t.TypeAttribute},
		Source:           c.opts.Source,
		Sweep:            c.sweep,
		CollectionsSwept: c.swept.Load(),
		Deleted:          c.deleted.Load(),
		KeyOnly:          c.opts.KeyOnly,
		KeysScanned:      c.scanned.Load(),
		OtherItems:       c.others.Load(),
		OutsideFilter:    c.outside.Load(),
		SweepReadUnits:   c.units.load(),
		KeysSpilled:      c.spilled.Load() + c.expected.spilled,
		Seconds:          took.Seconds(),
	}
	if c.touched != nil {
		r.KeysSpilled += c.touched.spilled
	}
	if c.opts.KeyOnly {
		r.TargetKeysRead = c.scanned.Load() + c.read.Load()
	}
	if c.opts.KeyOnly && !c.opts.NoSweep {
		r.SweepMode = SweepScan
		if d := c.opts.Digests; d != nil && d.Previous != nil {
			r.SweepMode = SweepQuery
			r.CollectionsQueried = c.swept.Load()
		}
		if d := c.opts.Digests; d != nil && (d.Previous != nil || d.Next != nil) {
			r.Collections = c.collections.Load()
		}
		if r.SweepMode == SweepQuery {
			r.CollectionsChanged, r.CollectionsVanished = c.changed.Load(), c.vanished.Load()
		}
	}
	if t.SK != nil {
		r.KeySchema.SK = &KeyAttribute{Name: t.SK.Name, Type: string(t.SK.Type)}
	}
	if c.in.Snapshot != nil {
		r.Snapshot = c.in.Snapshot.Info().Note
	}
	if !c.sample.all {
		r.Sample = &Sample{Fraction: c.opts.Sample, Seed: c.opts.Seed}
	}
	c.tally.fill(r)
	r.InSync = r.Totals.Differences() == 0
	if c.opts.Mode == ModePrune && !c.opts.DryRun {
		// Prune deletes what it finds: the table is in sync when it ends.
		r.InSync = r.Totals.Stale == r.Deleted
	}
	return r
}
