package main

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/incremental"
	"github.com/dynafold/dynafold/verify"
)

// runIncrementalPreview shows what migrate --incremental would change
// (incremental.RunPreview) and writes nothing. Exit 3 when the run would
// change something.
func (a *app) runIncrementalPreview(cmd *cobra.Command, command string) (err error) {
	ctx, cancel := a.cancelOnStop(cmd.Context())
	defer cancel()
	rep := a.newReport(command)
	defer func() { err = a.finishReport(rep, err) }()

	opts, o, err := a.openCompare(ctx, rep, verify.ModeDiff)
	if err != nil {
		return err
	}
	defer o.Close()
	l, src, plan, fingerprint := o.l, o.src, o.plan, rep.Fingerprint

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
	res, err := incremental.RunPreview(ctx, src, plan, client, incremental.PreviewOptions{
		Begin:   incremental.BeginOptions{CheckpointPath: ckptPath, Fingerprint: fingerprint, Overlap: a.v.GetDuration("overlap"), Logger: a.log},
		Compare: opts, NoDeletes: a.v.GetBool("no-deletes"),
	})
	if err != nil {
		return err
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

func (a *app) printPreview(res *incremental.Preview) error {
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
