package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// mysqlSyncDriver is the MariaDB/MySQL test source.
func mysqlSyncDriver(t *testing.T) testenv.Driver {
	t.Helper()
	for _, d := range testenv.Drivers() {
		if d.Name == "mysql" {
			return d
		}
	}
	t.Fatal("no mysql driver in testenv.Drivers")
	return testenv.Driver{}
}

// mysqlSyncDigits is n in 0..9999 as a derived table, for bulk inserts
// that need no recursive CTE or sequence engine.
const mysqlSyncDigits = `(SELECT a.d + 10*b.d + 100*c.d + 1000*e.d AS n FROM
	(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) a,
	(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) b,
	(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) c,
	(SELECT 0 d UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9) e) digits`

// mysqlSyncFreshScan migrates the source as it is now into a new table and
// returns that table's items: what sync must have converged to.
func mysqlSyncFreshScan(t *testing.T, tg *target) []string {
	t.Helper()
	fresh := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, tg.client, fresh)
	flags := append([]string(nil), tg.flags...)
	flags[len(flags)-1] = fresh
	r := clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	r = clitest.Run(t, t.TempDir(), nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	return testenv.ScanItems(t, tg.client, fresh)
}

// TestSyncMySQLPortfolios loads the portfolios design from MariaDB with
// sync, applies moves, deletes, inserts, a primary-key change and one
// 10,000-row transaction across the three tables, and checks that the
// table is item for item what a fresh migrate of the final source writes.
func TestSyncMySQLPortfolios(t *testing.T) {
	tg := newTarget(t, mysqlSyncDriver(t), "configs/portfolios.yaml", "testdata/portfolios/mysql.sql")
	r := tg.run(t, "", "table", "create")
	require.Equal(t, 0, r.Code, r.Output())
	dir := t.TempDir()

	r = tg.run(t, dir, "sync", "--until-caught-up", "--progress", "none")
	require.Equal(t, 0, r.Code, r.Output())
	require.Contains(t, r.Stderr, "binlog retention")
	require.Equal(t, portfolioItems, testenv.ScanItems(t, tg.client, tg.table))

	testenv.ExecSQL(t, "mysql", tg.dsn, `
		UPDATE servers SET portfolio_id = 2 WHERE id = 'JeffSiteServer';
		DELETE FROM `+"`databases`"+` WHERE id = 'BobInternalDB';
		INSERT INTO `+"`databases`"+` (id, server_id) VALUES ('NewDB', 'BobSiteServer');
		UPDATE `+"`databases`"+` SET id = 'RenamedDB' WHERE id = 'JeffInternalDB';
		UPDATE portfolios SET name = 'Jeff''s Plumbing & Heating' WHERE id = 1;
	`)
	// One transaction of 10,000 rows: 2,000 portfolios, 4,000 servers and
	// 4,000 databases.
	testenv.ExecSQL(t, "mysql", tg.dsn, fmt.Sprintf(`
		START TRANSACTION;
		INSERT INTO portfolios (id, name) SELECT 1000 + n, CONCAT('bulk ', n) FROM %[1]s WHERE n < 2000;
		INSERT INTO servers (id, portfolio_id) SELECT CONCAT('bulk-srv-', n), 1000 + n DIV 2 FROM %[1]s WHERE n < 4000;
		INSERT INTO `+"`databases`"+` (id, server_id) SELECT CONCAT('bulk-db-', n), CONCAT('bulk-srv-', n) FROM %[1]s WHERE n < 4000;
		COMMIT;
	`, mysqlSyncDigits))

	r = tg.run(t, dir, "sync", "--until-caught-up", "--progress", "none")
	require.Equal(t, 0, r.Code, r.Output())
	// Streamed, not loaded again: five single-statement transactions and
	// the large one.
	require.Contains(t, r.Stdout, "sync stream: 6 transactions, 10,005 changes applied")
	require.Regexp(t, `confirmed through binlog\.\d+:\d+;gtid=0-1-\d+ \(caught up with `, r.Stdout)
	got := testenv.ScanItems(t, tg.client, tg.table)
	require.Len(t, got, 10+10000)
	require.Equal(t, mysqlSyncFreshScan(t, tg), got)

	r = tg.run(t, "", "verify")
	require.Equal(t, 0, r.Code, r.Output())

	// Nothing changed since: a third run is caught up at once and leaves
	// the table as it is.
	r = tg.run(t, dir, "sync", "--until-caught-up", "--progress", "none")
	require.Equal(t, 0, r.Code, r.Output())
	require.Equal(t, got, testenv.ScanItems(t, tg.client, tg.table))

	r = tg.run(t, dir, "sync", "cleanup")
	require.Equal(t, 0, r.Code, r.Output())
	require.Contains(t, r.Stdout, "removed file")
}

// TestSyncMySQLRefusesStatementBinlog: with binlog_format = STATEMENT sync
// exits 2 and says how to fix it.
func TestSyncMySQLRefusesStatementBinlog(t *testing.T) {
	tg := newTarget(t, mysqlSyncDriver(t), "configs/portfolios.yaml", "testdata/portfolios/mysql.sql")
	r := tg.run(t, "", "table", "create")
	require.Equal(t, 0, r.Code, r.Output())
	testenv.ExecSQL(t, "mysql", tg.dsn, "SET GLOBAL binlog_format = 'STATEMENT'")
	t.Cleanup(func() { testenv.ExecSQL(t, "mysql", tg.dsn, "SET GLOBAL binlog_format = 'ROW'") })

	r = tg.run(t, t.TempDir(), "sync", "--until-caught-up", "--progress", "none")
	require.Equal(t, 2, r.Code, r.Output())
	require.Contains(t, r.Stderr, "binlog_format is STATEMENT")
	require.Contains(t, r.Stderr, "SET GLOBAL binlog_format = 'ROW'")
	require.True(t, strings.Contains(r.Stderr, "fix:"), r.Stderr)
}
