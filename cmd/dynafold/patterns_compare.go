package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/patterns"
)

// patternsCompareOptions are the flags of patterns --compare-source.
type patternsCompareOptions struct {
	samples, concurrency int
	seed                 uint64
	only                 string
}

func (a *app) patternsCompareOptions() (patternsCompareOptions, error) {
	o := patternsCompareOptions{samples: a.v.GetInt("samples"), concurrency: a.v.GetInt("concurrency"), seed: a.v.GetUint64("seed"), only: a.v.GetString("only")}
	if o.samples < 1 {
		return o, usageError(fmt.Errorf("--samples must be at least 1, not %d", o.samples))
	}
	if o.concurrency < 1 {
		return o, usageError(fmt.Errorf("--concurrency must be at least 1, not %d", o.concurrency))
	}
	return o, nil
}

// runPatternsCompare is patterns --compare-source: the shadow comparison
// of each pattern's items with its SQL's rows (patterns.Compare).
func (a *app) runPatternsCompare(cmd *cobra.Command, rep *report) error {
	opts, err := a.patternsCompareOptions()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	o, err := a.open(ctx, rep, preamble{conns: 2, prepare: func(l *loaded) error {
		if len(l.cfg.Patterns) == 0 {
			return usageError(fmt.Errorf("%s declares no access_patterns", l.path))
		}
		return nil
	}})
	if err != nil {
		return err
	}
	defer o.Close()
	l, src, plan := o.l, o.src, o.plan
	ro, ok := src.(patterns.Source)
	if !ok {
		return fmt.Errorf("the %s source cannot run read-only queries", src.Driver())
	}
	client, err := a.dynamo(ctx, l, opts.concurrency)
	if err != nil {
		return err
	}
	if _, err := a.requireTable(ctx, client, plan.Table, l); err != nil {
		return err
	}
	res, err := patterns.Compare(ctx, client, ro, plan, patterns.CompareOptions{Samples: opts.samples, Seed: opts.seed, Concurrency: opts.concurrency, Only: opts.only})
	if err != nil {
		return mappingPathError(l.path, err)
	}
	rep.Result = res
	switch a.v.GetString("output") {
	case "json":
		writeJSON(a.stdout, res)
	case "markdown":
		res.WriteMarkdown(a.stdout)
	default:
		res.WriteText(a.stdout, a.color(a.stdout))
	}
	if !res.OK() {
		return &exitError{code: exitDifferences, err: fmt.Errorf("%d of %d comparisons differ, %d patterns without sql: fail", res.Mismatches, res.Comparisons, res.Failed)}
	}
	return nil
}

// mappingPathError names the mapping file before mapping errors found
// while describing the patterns' SQL, as connect does for entities.
func mappingPathError(path string, err error) error {
	var merrs mapping.Errors
	if errors.As(err, &merrs) {
		return fmt.Errorf("%s:\n%w", path, err)
	}
	return err
}
