package main

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// A round that re-derives more rows than one slice holds reads its slices
// over several PostgreSQL connections that share the round's snapshot
// (--concurrency of them, at most one a core), and writes what one
// connection would: a portfolio rename that reaches 9,000 databases (three
// slices of 4,096 rows) is read by three connections, and the table then
// equals a fresh migrate.
func TestSyncReadsARoundOverSeveralConnections(t *testing.T) {
	d := pgOnly()[0]
	sd := newSyncDesign(t, d, "portfolios", "testdata/sync/portfolios.yaml")
	testenv.ExecSQL(t, d.Name, sd.dsn, `
		INSERT INTO portfolios (id, name) VALUES (10, 'Wide');
		INSERT INTO servers (id, portfolio_id) VALUES ('WideServer', 10);
		INSERT INTO databases (id, server_id) SELECT 'WideDb' || n, 'WideServer' FROM generate_series(1, 9000) n;`)
	sd.catchUp(t)
	testenv.ExecSQL(t, d.Name, sd.dsn, "UPDATE portfolios SET name = 'Wider' WHERE id = 10")
	// Three cores for sync, whatever the machine has.
	r := clitest.Run(t, sd.dir, []string{"GOMAXPROCS=3"}, sd.args("sync", "--until-caught-up", "--progress", "none", "--log-level", "debug", "--concurrency", "3")...)
	require.Equal(t, 0, r.Code, r.Output())
	m := regexp.MustCompile(`"msg":"round applied".*"rows":(\d+).*"readers":(\d+)`).FindStringSubmatch(r.Stderr)
	require.NotNil(t, m, r.Output())
	require.Equal(t, []string{"9002", "3"}, m[1:], "rows re-derived (the portfolio, its server, its 9,000 databases) and the connections that read them")
	sd.requireConverged(t)
}
