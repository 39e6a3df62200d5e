package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// `dynafold-bench shadow`, run tiny against the real services from both
// engines: it loads the design, runs sync without and with the shadow
// comparison under churn, and writes results in which the comparison was
// made and found nothing. Rates are the benchmark's business, not the
// test's.
func TestShadowBench(t *testing.T) {
	pg, my, endpoint := testenv.PostgresDSN(t), testenv.MySQLDSN(t), testenv.DynamoEndpoint(t)
	testenv.ShareServer(t, "postgres")
	testenv.ShareServer(t, "mysql")
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	database := "dft_shadowbench_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = testenv.Exec(ctx, "postgres", pg, `DROP DATABASE IF EXISTS "`+database+`" WITH (FORCE)`)
		_ = testenv.Exec(ctx, "mysql", my, "DROP DATABASE IF EXISTS `"+database+"`")
	})
	out := t.TempDir()
	cmd := rootCommand()
	// 20 portfolios, each database moved round its three servers once a
	// run: 60 changes a run.
	cmd.SetArgs([]string{"shadow", "--bin", filepath.Dir(clitest.Binary(t)), "--repo", "../..",
		"--pg-dsn", pg, "--mysql-dsn", my, "--endpoint", endpoint, "--database", database,
		"--rate", "20", "--duration", "3s", "--portfolios", "20", "--shadow-rate", "10", "--conns", "2", "--out", out})
	require.NoError(t, cmd.ExecuteContext(context.Background()))

	files, err := filepath.Glob(filepath.Join(out, "shadow-*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var res shadowResults
	require.NoError(t, json.Unmarshal(data, &res))
	require.Len(t, res.Sources, 2)
	for _, s := range res.Sources {
		t.Run(s.Source, func(t *testing.T) {
			require.Len(t, s.Runs, 2, "one run without the comparison, one with")
			require.False(t, s.Runs[0].Shadow)
			require.True(t, s.Runs[1].Shadow)
			for _, r := range s.Runs {
				require.Positive(t, r.Applied, "changes applied while the churn committed (shadow %v)", r.Shadow)
				require.EqualValues(t, 60, r.Lag.Applied, "every change of the churn applied (shadow %v)", r.Shadow)
			}
			require.Zero(t, s.Runs[0].Comparisons, "no comparison without --shadow-patterns")
			require.Positive(t, s.Comparisons, "comparisons under churn")
			require.Zero(t, s.Mismatches, "mismatches under churn: %s", s.Runs[1].MismatchLog)
			require.Len(t, s.Runs[1].Patterns, 3, "the design's three patterns")
		})
	}
}
