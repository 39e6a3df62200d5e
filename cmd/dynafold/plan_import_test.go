package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/plan"
)

// plan --sink import: a clean mapping passes and shows the import cost
// beside BatchWrite's; LSIs, an existing table and duplicate keys are
// refused before any file is written.
func TestPlanForImport(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/portfolios/"+d.Name+".sql"))
			table := testenv.NewTableName(t)
			args := []string{"--config", clitest.RepoPath("configs/portfolios.yaml"), "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}

			r, rep := runPlan(t, append([]string{"--sink", "import"}, args...)...)
			require.Equal(t, 0, r.Code, r.Output())
			require.NotNil(t, rep.Import)
			require.Equal(t, rep.Totals.Bytes, rep.Import.Bytes)
			require.Equal(t, plan.DefaultImportPrice, rep.Import.PricePerGB)
			require.InDelta(t, float64(rep.Totals.Bytes)/(1<<30)*0.15, rep.Import.USD, 1e-12)
			require.Equal(t, rep.Estimates.Cost.TotalUSD, rep.Import.BatchWriteUSD)

			text := clitest.Run(t, "", nil, append([]string{"plan", "--sink", "import"}, args...)...)
			require.Equal(t, 0, text.Code, text.Output())
			require.Contains(t, text.Stdout, "Import (export + ImportTable)")

			// The table now exists: an import cannot create it.
			require.Equal(t, 0, clitest.Run(t, "", nil, append([]string{"table", "create"}, args...)...).Code)
			testenv.DeleteTableOnCleanup(t, testenv.DynamoClient(t), table)
			r, rep = runPlan(t, append([]string{"--sink", "import"}, args...)...)
			require.Equal(t, exitUsage, r.Code, r.Output())
			require.Contains(t, findingsOf(rep), planFinding{"error", "import.table_exists", "target.table", "table " + table + " exists: ImportTable creates new tables only (delete it, or use migrate)"})
		})
	}
	t.Run("lsi", func(t *testing.T) {
		d := testenv.Drivers()[0]
		dsn := d.NewDB(t)
		testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/alleycat/"+d.Name+".sql"))
		r, rep := runPlan(t, "--sink", "import", "--config", clitest.RepoPath("configs/alleycat.yaml"), "--source-dsn", dsn, "--no-target")
		require.Equal(t, exitUsage, r.Code, r.Output())
		require.Contains(t, findingsOf(rep), planFinding{"error", "import.local_index", "target.indexes.ByNumeric", "ImportTable cannot create local secondary index ByNumeric: load this table with table create and migrate instead"})
	})
	t.Run("duplicate keys", func(t *testing.T) {
		d := testenv.Drivers()[0]
		r, rep := runPlan(t, "--sink", "import", "--config", planConfig("nonunique"), "--source-dsn", planDB(t, d), "--no-target", "--concurrency", "1")
		require.Equal(t, exitUsage, r.Code, r.Output())
		require.Equal(t, int64(1), rep.Totals.Duplicates.Count)
		require.Contains(t, findingsOf(rep), planFinding{"error", "data.duplicate_key", "entities.line", `item key (PK "ORDER#1", SK "LINE") is produced again by line row order_id=1, line_no=2: one item would silently overwrite the other`})
	})
}
