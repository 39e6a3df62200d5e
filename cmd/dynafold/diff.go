package main

import (
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/dynafold/dynafold/verify"
)

func (a *app) diffCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Show what migrate would change, writing nothing; exit 3 when it would change something",
		Long: `Previews a migration: every row is read and built into items as migrate
would, and each item is compared with the table: to create, to update (with
the attributes added, removed or changed, old and new values) or unchanged.
The table is swept for stale items, which migrate --prune would delete:
every item is scanned (--sweep table, the default), or only the collections
the rows produce are queried (--sweep collections). Nothing is written anywhere: no items, no
checkpoint. migrate --dry-run does the same.

The report is text on a terminal, --output json for machines (the schema is
in docs/verify.md) or --output markdown for a pull-request comment;
--report PATH also writes the JSON.

Exit codes: 0 nothing would change · 3 something would · 1 failure · 2 invalid
usage or mapping.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.v.GetBool("incremental") {
				if cmd.Flags().Changed("sweep") {
					return usageError(errSweepIncremental)
				}
				return a.runIncrementalPreview(cmd, "diff --incremental")
			}
			return a.runCompare(cmd, verify.ModeDiff, "diff")
		},
	}
	f := cmd.Flags()
	f.Bool("incremental", false, "preview migrate --incremental: compare only the items of rows changed since the last incremental run, and count the stale items its key sweep would delete")
	f.Duration("overlap", 5*time.Minute, "with --incremental: as for migrate --incremental")
	f.String("checkpoint", "", "with --incremental: the checkpoint file whose incremental state to read (default .dynafold/<table>.checkpoint.json)")
	f.Bool("no-deletes", false, "with --incremental: leave out the key sweep")
	addReadFlags(cmd.Flags())
	addCompareFlags(cmd.Flags())
	return cmd
}

// errSweepIncremental refuses --sweep on an incremental run, whose key
// sweep scans the table or queries the collections whose keys changed.
var errSweepIncremental = errors.New("--sweep does not apply with --incremental: its key sweep scans the table, or queries only the collections whose keys changed (--full-sweep scans)")

// runDryRun is migrate --dry-run: diff, with migrate's own flags for the
// reading. It never opens the checkpoint.
func (a *app) runDryRun(cmd *cobra.Command) error {
	return a.runCompare(cmd, verify.ModeDiff, "migrate --dry-run")
}
