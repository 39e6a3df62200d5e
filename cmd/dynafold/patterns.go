package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/patterns"
)

func (a *app) patternsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "patterns",
		Short: "Run the mapping's access patterns against the table and check their expectations",
		Long: `Runs every query under access_patterns: against the target table (the
source is not needed) and prints, per pattern, the keys of the items returned,
the pages read and the read capacity consumed, and whether each expectation
holds. Exit 0 when all hold, 3 when one does not.

With --compare-source, every pattern that gives its SQL meaning (sql:,
params:, compare:) is also run against the source, in one read-only
snapshot, for --samples parameter tuples chosen by --seed, and its items are
compared with the SQL's rows, values converted as the mapping converts them.
Exit 0 when all agree, 3 on a mismatch, 2 for a mapping error (see
docs/shadow.md).`,
		Args: cobra.NoArgs,
		RunE: a.runPatterns,
	}
	cmd.Flags().Bool("items", false, "print the items each pattern returns")
	cmd.Flags().String("only", "", "run only the patterns whose name contains this text")
	cmd.Flags().Bool("compare-source", false, "also run each pattern's sql: against the source and compare the answers (see docs/shadow.md)")
	cmd.Flags().Int("samples", 100, "with --compare-source: parameter tuples compared per pattern")
	cmd.Flags().Uint64("seed", 1, "with --compare-source: chooses the sampled parameter tuples")
	cmd.Flags().Int("concurrency", 4, "with --compare-source: comparisons run at once")
	return cmd
}

func (a *app) runPatterns(cmd *cobra.Command, _ []string) (err error) {
	rep := a.newReport("patterns")
	defer func() { err = a.finishReport(rep, err) }()
	if a.v.GetBool("compare-source") {
		return a.runPatternsCompare(cmd, rep)
	}
	l, err := a.load()
	if err != nil {
		return err
	}
	rep.Table = l.static.Table.Name
	if len(l.cfg.Patterns) == 0 {
		return usageError(fmt.Errorf("%s declares no access_patterns", l.path))
	}
	client, err := a.dynamo(cmd.Context(), l, 2)
	if err != nil {
		return err
	}
	if _, err := a.requireTable(cmd.Context(), client, l.static.Table, l); err != nil {
		return err
	}
	res, err := patterns.Run(cmd.Context(), client, l.static, patterns.Options{Items: a.v.GetBool("items"), Only: a.v.GetString("only")})
	if err != nil {
		return err
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
		return &exitError{code: exitDifferences, err: fmt.Errorf("%d of %d access patterns do not hold", res.Failed, res.Passed+res.Failed)}
	}
	return nil
}
