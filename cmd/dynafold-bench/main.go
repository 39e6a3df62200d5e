// Command dynafold-bench measures dynafold end to end (`make bench`).
//
// It generates a dataset shaped like the portfolio example in PostgreSQL
// (portfolios, servers, databases; ten items per portfolio), then runs
// dynafold migrate as a child process against:
//
//   - the no-op DynamoDB endpoint (internal/ddbnoop, its own process), whose
//     ceiling it also measures by writing pre-built items through the same
//     SDK with no source and no mapping;
//   - dynalite;
//   - the no-op endpoint simulating a provisioned table of 5,000 WCU with
//     DynamoDB's 1,000 WCU per-partition limit.
//
// The export scenario exports each size to a directory and to an s3rver of
// its own, and sets each export's CPU per item beside the migrate's of the
// same size.
//
// The incremental scenario migrates the portfolio dataset with change
// columns into dynalite, changes 0.1% of its rows and runs migrate
// --incremental, reporting wall time and source rows read against the
// full run's.
//
// For each it reports items/s, CPU seconds per million items and peak RSS
// of the measured process, and writes the figures as JSON under
// bench-results/.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := rootCommand().ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "dynafold-bench:", err)
		os.Exit(1)
	}
}

// rootCommand is the command tree (the docs' examples are parsed against it).
func rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "dynafold-bench",
		Short:         "Benchmark dynafold end to end",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(runCommand(), genCommand(), ceilingCommand(), syncBenchCommand(), shadowBenchCommand(), syncFuzzCommand(), readCostCommand())
	return root
}
