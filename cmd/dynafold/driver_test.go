package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// Without driver:, the DSN's form names the driver, as docs/mapping.md says:
// a postgres:// URL, a mysql:// URL or user:pw@tcp(host:port)/db, given in
// the file or with --source-dsn. A DSN whose form names none (key=value)
// needs driver:.
func TestDriverFromTheDSNForm(t *testing.T) {
	t.Parallel()
	const body = `
version: 1
source: {DSN}
target: {table: portfolios, key: {pk: PK, sk: SK}}
entities:
  portfolio:
    from: portfolios
    key: {pk: "${id}", sk: "PORTFOLIO"}
`
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
			require.Equal(t, 0, tg.run(t, "", "table", "create").Code)
			endpoint := testenv.DynamoEndpoint(t)

			// The DSN on the command line, no driver anywhere.
			cfg := writeMapping(t, strings.Replace(body, "{DSN}", "{}", 1))
			r := clitest.Run(t, "", nil, "migrate", "--progress", "none", "--config", cfg, "--source-dsn", tg.dsn, "--endpoint", endpoint, "--table", tg.table)
			require.Equal(t, 0, r.Code, r.Output())
			require.Regexp(t, `total\s+2\s+2`, r.Stdout)

			// The DSN in the file, no driver.
			cfg = writeMapping(t, strings.Replace(body, "{DSN}", `{dsn: "`+tg.dsn+`"}`, 1))
			r = clitest.Run(t, "", nil, "migrate", "--progress", "none", "--restart", "--config", cfg, "--endpoint", endpoint, "--table", tg.table)
			require.Equal(t, 0, r.Code, r.Output())
		})
	}

	// A key=value DSN names no driver.
	cfg := writeMapping(t, strings.Replace(body, "{DSN}", "{}", 1))
	r := clitest.Run(t, "", nil, "migrate", "--config", cfg, "--source-dsn", "host=127.0.0.1 dbname=x user=y", "--endpoint", "http://127.0.0.1:1")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "source.driver: missing the source driver: the DSN's form does not name one")
	cfg = writeMapping(t, strings.Replace(body, "{DSN}", `{dsn: "host=127.0.0.1 dbname=x"}`, 1))
	r = clitest.Run(t, "", nil, "migrate", "--config", cfg, "--endpoint", "http://127.0.0.1:1")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "source.driver: missing the source driver: the DSN's form does not name one")
}

// plan's header names the table even when the mapping does not compile
// (and the --table override when one is given).
func TestPlanHeaderNamesTheTableOfABrokenMapping(t *testing.T) {
	t.Parallel()
	f := clitest.RepoPath("testdata/mappings/broken/08-undeclared-index.yaml")
	r := clitest.Run(t, "", nil, "plan", "--config", f, "--no-target")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.True(t, strings.HasPrefix(r.Stdout, "plan for table portfolios\n"), r.Stdout)
	r = clitest.Run(t, "", nil, "plan", "--config", f, "--no-target", "--table", "staging_portfolios")
	require.True(t, strings.HasPrefix(r.Stdout, "plan for table staging_portfolios\n"), r.Stdout)
	r, rep := runPlan(t, "--config", f, "--no-target")
	require.Equal(t, exitUsage, r.Code)
	require.Equal(t, "portfolios", rep.Table)
}
