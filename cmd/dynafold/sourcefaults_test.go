package main

// Faults and changes on the source side of a migration: reading
// connections killed mid-run, rows written while the run reads.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// killReaders terminates dynafold's connections to the test database and
// returns how many it terminated. On PostgreSQL the session holding the
// exported snapshot is spared unless all is set: readers can import the
// snapshot again only while it lives. On MariaDB every other connection to
// the database is killed (idle pool connections included; the driver
// replaces those unnoticed).
func killReaders(t *testing.T, driver, dsn string, all bool) int {
	t.Helper()
	switch driver {
	case "postgres":
		spare := "AND query NOT LIKE '%pg_export_snapshot%'"
		if all {
			spare = ""
		}
		return int(sqlInts(t, driver, dsn, `SELECT COUNT(*) FROM (
			SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = 'dynafold'
			  AND pid <> pg_backend_pid() AND state IN ('active', 'idle in transaction') `+spare+`) k WHERE ok`)[0][0])
	default:
		n := 0
		for _, id := range sqlInts(t, driver, dsn, `SELECT ID FROM information_schema.PROCESSLIST
			WHERE DB = DATABASE() AND ID <> CONNECTION_ID()`) {
			// The connection may be gone already: that is not an error here.
			if testenv.Exec(context.Background(), driver, dsn, fmt.Sprintf("KILL %d", id[0])) == nil {
				n++
			}
		}
		return n
	}
}

// waitForFirstItem returns once the table holds an item: the run has
// planned its shards and is reading, so what the tests do to the source
// from then on happens mid-run.
func waitForFirstItem(t *testing.T, client *dynamodb.Client, table string, done <-chan error) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		out, err := client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(1)})
		require.NoError(t, err)
		if len(out.Items) > 0 {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the run ended before writing anything: %v", err)
		case <-deadline:
			t.Fatal("no item written after a minute")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startMigrate starts `dynafold migrate` in dir and returns a channel that
// receives its exit once it ends, and its captured output.
func startMigrate(t *testing.T, dir string, args ...string) (<-chan error, *bytes.Buffer) {
	t.Helper()
	cmd := clitest.Command(context.Background(), t, dir, nil, append([]string{"migrate", "--progress", "none"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return done, &out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

func exitOf(err error) int {
	type coder interface{ ExitCode() int }
	if c, ok := err.(coder); ok {
		return c.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// scaleRun is a portfolio migration set up in a fresh database and table,
// read in small pages so that it lasts a few seconds: 6,000 rows under a
// --max-wcu cap in the CI tier, 30,000 at full speed in the full tier.
type scaleRun struct {
	driver, dsn, table, dir string
	client                  *dynamodb.Client
	flags                   []string
}

// faultPortfolios is the portfolios of a scaleRun, ten rows each.
var faultPortfolios = testenv.Size(600, 3000)

func newScaleRun(t *testing.T, d testenv.Driver) *scaleRun {
	t.Helper()
	s := &scaleRun{driver: d.Name, dsn: d.NewDB(t), client: testenv.DynamoClient(t), table: testenv.NewTableName(t), dir: t.TempDir()}
	loadScale(t, d.Name, s.dsn, faultPortfolios)
	testenv.DeleteTableOnCleanup(t, s.client, s.table)
	s.flags = []string{"--config", clitest.RepoPath("configs/portfolios.yaml"), "--source-dsn", s.dsn,
		"--endpoint", testenv.DynamoEndpoint(t), "--table", s.table, "--page-size", fmt.Sprint(testenv.Size(100, 300)), "--concurrency", "2"}
	r := clitest.Run(t, s.dir, nil, append([]string{"table", "create"}, s.flags[:8]...)...)
	require.Equal(t, 0, r.Code, r.Output())
	if !testenv.Full() {
		// About 11,400 write units (servers and databases go to GSI1 too):
		// four seconds.
		s.flags = append(s.flags, "--max-wcu", "3000")
	}
	return s
}

// A reading connection killed mid-run (pg_terminate_backend, MariaDB KILL)
// is read again from the last row it delivered: the run exits 0, reads
// every row exactly once, counts the reconnections, and the table is
// exact.
func TestSourceConnectionKilledIsReadAgain(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			s := newScaleRun(t, d)
			report := filepath.Join(s.dir, "report.json")
			done, out := startMigrate(t, s.dir, append(s.flags, "--report", report)...)
			waitForFirstItem(t, s.client, s.table, done)
			killed := 0
			for range 3 {
				killed += killReaders(t, s.driver, s.dsn, false)
				time.Sleep(300 * time.Millisecond)
			}
			require.Positive(t, killed, "the test killed reading connections")
			require.Equal(t, 0, exitOf(<-done), out.String())

			rep := readReport(t, report)
			t.Logf("killed %d connections; summary %+v", killed, rep.Summary.Total)
			require.Positive(t, rep.Summary.Total.ReadRetries, "the summary counts the reconnections")
			require.EqualValues(t, 10*faultPortfolios, rep.Summary.Total.RowsRead, "every row read exactly once")
			require.EqualValues(t, 10*faultPortfolios, rep.Summary.Total.ItemsWritten)
			require.Contains(t, out.String(), "source connection lost; reading again after the last row")
			requireScaleTable(t, s.client, s.table, faultPortfolios)
		})
	}
}

// When the source keeps failing, a shard gives up after a bounded number
// of attempts: the run exits 4 with its checkpoint saved, and a later run
// resumes it and completes with nothing lost or duplicated. The source
// stays reachable while its connections are killed in a loop; a proxy in
// front of it delays every answer by more than the loop's period, so no
// reconnected reader reads the rest of its shard between two kills (one
// sometimes did, and the run completed).
func TestSourceKeepsFailingThenResumes(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			s := newScaleRun(t, d)
			host := dsnHost(t, d.Name, s.dsn)
			proxy := startProxy(t, host)
			flags := append([]string{}, s.flags...)
			require.Equal(t, "--source-dsn", flags[2])
			flags[3] = strings.Replace(s.dsn, host, proxy.Addr(), 1)
			done, out := startMigrate(t, s.dir, append(flags, "--report", "failed.json")...)
			waitForFirstItem(t, s.client, s.table, done)
			proxy.SetLatency(100 * time.Millisecond)
			var err error
		kill:
			for {
				killReaders(t, s.driver, s.dsn, true)
				select {
				case err = <-done:
					break kill
				case <-time.After(20 * time.Millisecond):
				}
			}
			require.Equal(t, exitInterrupted, exitOf(err), out.String())
			failed := readReport(t, filepath.Join(s.dir, "failed.json"))
			require.Equal(t, exitInterrupted, failed.ExitCode)
			require.Less(t, failed.Summary.Total.CheckpointItems, int64(10*faultPortfolios), "the run stopped short")
			require.Regexp(t, `reading entity \w+ shard \d+`, out.String(), "the error names the entity and shard")

			proxy.SetLatency(0)
			r := clitest.Run(t, s.dir, nil, append([]string{"migrate", "--progress", "none", "--report", "resumed.json"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
			resumed := readReport(t, filepath.Join(s.dir, "resumed.json"))
			require.True(t, resumed.Summary.Resumed)
			require.EqualValues(t, 10*faultPortfolios, resumed.Summary.Total.CheckpointRows, "rows acknowledged over both runs")
			require.EqualValues(t, 10*faultPortfolios, resumed.Summary.Total.CheckpointItems, "items acknowledged over both runs")
			requireScaleTable(t, s.client, s.table, faultPortfolios)
		})
	}
}

// All readers of a PostgreSQL run share one exported snapshot: while the
// run reads, whole collections are inserted and others deleted, each in one
// transaction; the table ends up exactly as the source was when the run
// began, with no half collection of either. (MySQL cannot share a snapshot
// between connections; source/snapshot_test.go proves what it guarantees.)
func TestPostgresReadersShareOneSnapshot(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	require.Equal(t, "postgres", d.Name)
	s := newScaleRun(t, d)
	report := filepath.Join(s.dir, "report.json")
	done, out := startMigrate(t, s.dir, append(s.flags, "--report", report)...)
	waitForFirstItem(t, s.client, s.table, done)

	commits := 0
	var err error
write:
	for i := 1; ; i++ {
		// A new collection (one portfolio, three servers, six databases),
		// and an existing one deleted, in one transaction.
		n, old := faultPortfolios+i, i
		testenv.ExecSQL(t, s.driver, s.dsn, fmt.Sprintf(`BEGIN;
INSERT INTO portfolios VALUES (%[1]d, 'Portfolio %[1]d');
INSERT INTO servers SELECT 'Srv%[1]dn' || s, %[1]d FROM generate_series(1, 3) s;
INSERT INTO databases SELECT 'Db%[1]dn' || s || 'd' || d, 'Srv%[1]dn' || s FROM generate_series(1, 3) s, generate_series(1, 2) d;
DELETE FROM databases WHERE server_id IN (SELECT id FROM servers WHERE portfolio_id = %[2]d);
DELETE FROM servers WHERE portfolio_id = %[2]d;
DELETE FROM portfolios WHERE id = %[2]d;
COMMIT;`, n, old))
		commits++
		select {
		case err = <-done:
			break write
		case <-time.After(50 * time.Millisecond):
		}
	}
	require.Equal(t, 0, exitOf(err), out.String())
	rep := readReport(t, report)
	t.Logf("%d transactions committed during the run; snapshot %+v", commits, rep.Summary.Snapshot)
	require.GreaterOrEqual(t, commits, 5, "the source changed while the run read it")
	require.True(t, rep.Summary.Snapshot.Shared)
	require.NotEmpty(t, rep.Summary.Snapshot.ID)
	require.EqualValues(t, 10*faultPortfolios, rep.Summary.Total.RowsRead)
	// Exactly the source as it was: no new collection, no deleted one
	// missing, nothing in between.
	requireScaleTable(t, s.client, s.table, faultPortfolios)
	remaining := sqlInts(t, s.driver, s.dsn, "SELECT COUNT(*) FROM portfolios WHERE id <= "+fmt.Sprint(faultPortfolios))[0][0]
	require.Less(t, remaining, int64(faultPortfolios), "collections the run migrated were deleted from the source meanwhile")
}

// Every source session is read-only: a query entity that tries to write,
// through a function with side effects (both databases) or a
// data-modifying CTE (PostgreSQL), fails and the source is untouched.
func TestQueryEntityCannotWriteToTheSource(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			if d.Name == "postgres" {
				testenv.ExecSQL(t, d.Name, dsn, `CREATE TABLE victims (id int PRIMARY KEY, name text);
INSERT INTO victims VALUES (1, 'a'), (2, 'b');
CREATE FUNCTION wipe() RETURNS int LANGUAGE plpgsql VOLATILE AS $$ BEGIN DELETE FROM victims; RETURN 1; END $$;`)
			} else {
				testenv.ExecSQL(t, d.Name, dsn, `CREATE TABLE victims (id int PRIMARY KEY, name text);
INSERT INTO victims VALUES (1, 'a'), (2, 'b');
CREATE FUNCTION wipe() RETURNS int MODIFIES SQL DATA BEGIN DELETE FROM victims; RETURN 1; END`)
			}
			queries := map[string]string{"function": "SELECT id, name, wipe() AS w FROM victims"}
			if d.Name == "postgres" {
				queries["cte"] = "WITH gone AS (DELETE FROM victims RETURNING id, name) SELECT id, name FROM gone"
			}
			client := testenv.DynamoClient(t)
			for name, query := range queries {
				t.Run(name, func(t *testing.T) {
					table := testenv.NewTableName(t)
					testenv.DeleteTableOnCleanup(t, client, table)
					dir := t.TempDir()
					config := filepath.Join(dir, "wipe.yaml")
					writeFile(t, config, fmt.Sprintf(`version: 1
source: {driver: %s}
target: {table: %s, key: {pk: PK, sk: SK}}
entities:
  victim:
    query: %q
    primary_key: [id]
    key: {pk: "V#${id}", sk: "V"}
    attributes: {Name: name}
`, d.Name, table, query))
					flags := []string{"--config", config, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t)}
					// Without the source: table create would describe the query
					// (refused read-only on MySQL); migrate is what is tested.
					r := clitest.Run(t, dir, nil, append([]string{"table", "create", "--no-source"}, flags...)...)
					require.Equal(t, 0, r.Code, r.Output())
					r = clitest.Run(t, dir, nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
					require.NotEqual(t, 0, r.Code, r.Output())
					t.Logf("exit %d: %s", r.Code, strings.TrimSpace(r.Stderr))
					require.Regexp(t, `(?i)read.only|data-modifying statement`, r.Output())
					require.Equal(t, int64(2), sqlInts(t, d.Name, dsn, "SELECT COUNT(*) FROM victims")[0][0], "nothing was deleted")
				})
			}
		})
	}
}

// Identifiers from the mapping are quoted by each driver's rules all the
// way through the CLI: a table, its columns and a joined parent named with
// quotes, backticks, semicolons and spaces migrate correctly.
func TestHostileIdentifiersMigrate(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			q := func(s string) string { // the database's own quoting, for the test's DDL
				if d.Name == "postgres" {
					return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
				}
				return "`" + strings.ReplaceAll(s, "`", "``") + "`"
			}
			parent, child := `own"ers; DROP TABLE x; --`, "it`ems'"
			name, owner := "na`me \"x\"", "owner; id"
			testenv.ExecSQL(t, d.Name, dsn, fmt.Sprintf(`CREATE TABLE %[1]s (id int PRIMARY KEY, %[3]s varchar(50));
CREATE TABLE %[2]s (id int PRIMARY KEY, %[4]s int NOT NULL, %[3]s varchar(50));
INSERT INTO %[1]s VALUES (1, 'alice'), (2, 'bob');
INSERT INTO %[2]s VALUES (10, 1, 'pen'), (11, 1, 'ink'), (12, 2, 'pad');`, q(parent), q(child), q(name), q(owner)))

			dir := t.TempDir()
			table := testenv.NewTableName(t)
			client := testenv.DynamoClient(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			config := filepath.Join(dir, "hostile.yaml")
			writeFile(t, config, fmt.Sprintf(`version: 1
source: {driver: %s}
target: {table: %s, key: {pk: PK, sk: SK}, type_attribute: _type}
entities:
  owner:
    from: %q
    key: {pk: "O#${id}", sk: "O"}
    attributes: {Name: %q}
  item:
    from: %q
    join:
      o: {from: %q, on: {id: %q}}
    key: {pk: "O#${o.id}", sk: "I#${id}"}
    attributes: {Name: %q, Owner: {from: %q}}
`, d.Name, table, parent, name, child, parent, owner, name, "o."+name))
			flags := []string{"--config", config, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t)}
			r := clitest.Run(t, dir, nil, append([]string{"table", "create"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
			r = clitest.Run(t, dir, nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
			require.ElementsMatch(t, []string{
				`{"Name":"alice","PK":"O#1","SK":"O","_type":"owner"}`,
				`{"Name":"bob","PK":"O#2","SK":"O","_type":"owner"}`,
				`{"Name":"pen","Owner":"alice","PK":"O#1","SK":"I#10","_type":"item"}`,
				`{"Name":"ink","Owner":"alice","PK":"O#1","SK":"I#11","_type":"item"}`,
				`{"Name":"pad","Owner":"bob","PK":"O#2","SK":"I#12","_type":"item"}`,
			}, testenv.ScanItems(t, client, table))
			r = clitest.Run(t, dir, nil, append([]string{"verify"}, flags...)...)
			require.Equal(t, 0, r.Code, r.Output())
		})
	}
}
