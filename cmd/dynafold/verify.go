package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dynafold/dynafold/pipeline"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/verify"
)

func (a *app) verifyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Compare the source with the table after a migration; exit 3 when they differ",
		Long: `Rebuilds every item from the source through the mapping, as migrate does,
reads the table with consistent BatchGetItem requests and compares them
attribute by attribute (numbers as numbers, sets as sets). Each item is
unchanged, to create (missing in the table) or to update (different). Then
the table is swept for stale items: items that carry the mapping's type
attribute or an entity's sort-key prefix but that no row produces. By
default (--sweep table) every item of the table is scanned, key and type
only, so a collection no row produces any more (a customer deleted with
its orders) is found too; --sweep collections queries only the collections
the rows produce, and cannot see those. Nothing is written.

--sample checks a fraction of the rows, chosen by a hash of each row's
primary key and --seed, so the same seed checks the same rows; every row is
still read and counted, and a table sweep still sweeps the whole table.

Exit codes: 0 source and target agree · 3 they differ · 1 failure · 2 invalid
usage or mapping.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runCompare(cmd, verify.ModeVerify, "verify")
		},
	}
	f := cmd.Flags()
	f.Float64("sample", 1, "fraction of rows to check, in (0, 1], chosen by a hash of each row's primary key and --seed")
	f.Uint64("seed", 1, "seed of the sample: the same seed checks the same rows")
	addReadFlags(f)
	addCompareFlags(f)
	return cmd
}

// addReadFlags adds the source-reading flags verify and diff share with
// migrate (which declares its own).
func addReadFlags(f *pflag.FlagSet) {
	f.Int("concurrency", 4, "shards read at once")
	f.Int("page-size", pipeline.DefaultPageSize, "rows per keyset page")
}

// addCompareFlags adds the comparer's flags: to verify and diff, and to
// migrate for --dry-run and --prune.
func addCompareFlags(f *pflag.FlagSet) {
	f.Int("examples", 10, "findings of each class (create, update, stale) listed with their attributes")
	f.Int("lookups", 8, "BatchGetItem and Query requests in flight (a table sweep scans --concurrency segments at once)")
	f.String("sweep", string(verify.SweepTable), "how stale items are looked for: table (scan every item of the table, key and type only) or collections (query only the collections the rows produce: cheaper on a large table the rows cover a small part of, but blind to collections no row produces)")
	f.String("temp-dir", "", "directory for the sorted runs of keys a large comparison spills to disk (default the system's temporary directory)")
	f.Int("spill-bytes", 64<<20, "bytes of keys held in memory before spilling sorted runs to --temp-dir")
	_ = f.MarkHidden("spill-bytes")
}

// compareOptions reads the comparer's flags; a bad value is invalid usage.
func (a *app) compareOptions(mode verify.Mode) (verify.Options, error) {
	v := a.v
	o := verify.Options{
		Mode:       mode,
		Sample:     1,
		Examples:   v.GetInt("examples"),
		Readers:    v.GetInt("concurrency"),
		PageSize:   v.GetInt("page-size"),
		Lookups:    v.GetInt("lookups"),
		SpillBytes: v.GetInt("spill-bytes"),
		TempDir:    v.GetString("temp-dir"),
		Sweep:      verify.Sweep(v.GetString("sweep")),
		Logger:     a.log,
	}
	if o.Sweep != verify.SweepTable && o.Sweep != verify.SweepCollections {
		return o, usageError(fmt.Errorf("--sweep must be table or collections, not %q", o.Sweep))
	}
	if mode == verify.ModeVerify {
		o.Sample, o.Seed = v.GetFloat64("sample"), v.GetUint64("seed")
		if o.Sample <= 0 || o.Sample > 1 {
			return o, usageError(fmt.Errorf("--sample must be a fraction in (0, 1], not %g", o.Sample))
		}
	}
	switch {
	case o.Readers < 1 || o.PageSize < 1 || o.Lookups < 1 || o.SpillBytes < 1:
		return o, usageError(errors.New("--concurrency, --page-size and --lookups must be at least 1"))
	case o.Examples < 0:
		return o, usageError(errors.New("--examples must not be negative"))
	case o.Examples == 0:
		o.Examples = -1 // verify.Options: 0 is the default, -1 none
	}
	return o, nil
}

// cancelOnStop returns a context that the first stop signal cancels, for
// commands that read only and have nothing to save.
func (a *app) cancelOnStop(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		select {
		case <-a.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// openCompare opens what a comparison reads: its options, the mapping and
// the source. A diff, a preview of migrate, stops where migrate would (the
// lint gate). The caller closes what it opened.
func (a *app) openCompare(ctx context.Context, rep *report, mode verify.Mode) (verify.Options, *opened, error) {
	opts, err := a.compareOptions(mode)
	if err != nil {
		return opts, nil, err
	}
	o, err := a.open(ctx, rep, preamble{conns: opts.Readers + 2, lint: mode == verify.ModeDiff})
	if err != nil {
		return opts, nil, err
	}
	opts.Source = o.dsn.Identity()
	return opts, o, nil
}

// runCompare runs verify or diff (also as migrate --dry-run): it reads the
// source and the table, writes nothing, prints the report and exits 3 when
// they differ.
func (a *app) runCompare(cmd *cobra.Command, mode verify.Mode, command string) (err error) {
	// The first stop signal ends the comparison; there is nothing to save.
	ctx, cancel := a.cancelOnStop(cmd.Context())
	defer cancel()
	rep := a.newReport(command)
	defer func() { err = a.finishReport(rep, err) }()

	opts, o, err := a.openCompare(ctx, rep, mode)
	if err != nil {
		return err
	}
	defer o.Close()
	l, src, plan := o.l, o.src, o.plan

	client, err := a.dynamo(ctx, l, opts.Lookups)
	if err != nil {
		return err
	}
	if _, err := a.requireTable(ctx, client, plan.Table, l); err != nil {
		return err
	}
	snap, err := src.Snapshot(ctx, source.SnapshotOptions{Readers: opts.Readers})
	if err != nil {
		return err
	}
	defer snap.Close()
	res, err := verify.Run(ctx, verify.Input{Plan: plan, Snapshot: snap, Target: client}, opts)
	if err != nil {
		if ctx.Err() != nil && cmd.Context().Err() == nil {
			return fmt.Errorf("%s interrupted", mode)
		}
		return err
	}
	rep.Result = res
	if err := a.writeComparison(res); err != nil {
		return err
	}
	if !res.InSync {
		return &exitError{code: exitDifferences, err: differencesFound{res}}
	}
	return nil
}

// writeComparison prints a report in the --output format; text is
// coloured only on a terminal.
func (a *app) writeComparison(r *verify.Report) error {
	var err error
	switch a.v.GetString("output") {
	case "json":
		err = r.WriteJSON(a.stdout)
	case "markdown":
		err = r.WriteMarkdown(a.stdout)
	default:
		err = r.WriteText(a.stdout, a.color(a.stdout))
	}
	if err != nil {
		return fmt.Errorf("writing the %s report: %w", r.Command, err)
	}
	return nil
}

// differencesFound is exit 3; the report on stdout already says what.
type differencesFound struct{ r *verify.Report }

func (d differencesFound) Error() string {
	t := d.r.Totals
	return fmt.Sprintf("%s: %d differences (%d to create, %d to update, %d stale)", d.r.Command, t.Differences(), t.Create, t.Update, t.Stale)
}

func (d differencesFound) Is(target error) bool { return target == errReported }
