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
holds. Exit 0 when all hold, 3 when one does not.`,
		Args: cobra.NoArgs,
		RunE: a.runPatterns,
	}
	cmd.Flags().Bool("items", false, "print the items each pattern returns")
	cmd.Flags().String("only", "", "run only the patterns whose name contains this text")
	return cmd
}

func (a *app) runPatterns(cmd *cobra.Command, _ []string) (err error) {
	rep := a.newReport("patterns")
	defer func() { err = a.finishReport(rep, err) }()
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
