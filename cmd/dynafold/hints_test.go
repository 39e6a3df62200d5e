package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// A mistyped flag gets "did you mean", as a mistyped command does.
func TestUnknownFlagSuggestion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "--confg", "x.yaml"}, "dynafold: unknown flag: --confg (did you mean --config?)\n"},
		{[]string{"plan", "--no-targt"}, "dynafold: unknown flag: --no-targt (did you mean --no-target?)\n"},
		{[]string{"migrate", "--max-wc", "3"}, "dynafold: unknown flag: --max-wc (did you mean --max-wcu?)\n"},
		{[]string{"migrate", "--zzzzzz"}, "dynafold: unknown flag: --zzzzzz\n"},
	} {
		r := clitest.Run(t, "", nil, c.args...)
		require.Equal(t, exitUsage, r.Code, r.Output())
		require.Equal(t, c.want, r.Stderr)
	}
}

// Table and column names that differ only in case are named as such (the
// mapping's identifiers are quoted, so case matters), on both engines.
func TestCaseOnlyNameHints(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			ddl := `CREATE TABLE "Album" (id integer PRIMARY KEY, "Title" text)`
			if d.Name == "mysql" {
				ddl = "CREATE TABLE `Album` (id int PRIMARY KEY, `Title` varchar(50))"
			}
			testenv.ExecSQL(t, d.Name, dsn, ddl)
			mapping := func(from, col string) string {
				return writeMapping(t, `
version: 1
source: {driver: postgres}
target: {table: albums, key: {pk: PK, sk: SK}}
entities:
  album:
    from: `+from+`
    key: {pk: "ALBUM#${id}", sk: "A"}
    attributes: {Title: `+col+`}
`)
			}
			r := clitest.Run(t, "", nil, "migrate", "--config", mapping("album", "Title"), "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t))
			require.Equal(t, exitUsage, r.Code, r.Output())
			require.Contains(t, r.Output(), `entities.album.from: table "album" does not exist in the source (did you mean "Album"? names are case-sensitive)`)

			r = clitest.Run(t, "", nil, "migrate", "--config", mapping("Album", "title"), "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t))
			require.Equal(t, exitUsage, r.Code, r.Output())
			require.Contains(t, r.Output(), `unknown column "title" in table Album (did you mean "Title"?)`)
		})
	}
}

// A join's on: may be written either way round: {server_id: id} (the
// entity's column first) migrates exactly the items the canonical
// {id: server_id} (the joined table's column first) does.
func TestJoinOnEitherDirectionMigratesTheSameItems(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
	const body = `
version: 1
source: {driver: postgres}
target: {table: portfolios, key: {pk: PK, sk: SK}}
entities:
  database:
    from: databases
    join:
      server: {from: servers, on: ON}
    key: {pk: "${server.portfolio_id}", sk: "DATABASE#${id}"}
    attributes: {ServerID: server_id, Portfolio: server.portfolio_id}
`
	var scans [][]string
	for _, on := range []string{"{id: server_id}", "{server_id: id}"} {
		cfg := writeMapping(t, strings.Replace(body, "ON", on, 1))
		table := testenv.NewTableName(t)
		testenv.DeleteTableOnCleanup(t, tg.client, table)
		flags := []string{"--config", cfg, "--source-dsn", tg.dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
		r := clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
		require.Equal(t, 0, r.Code, r.Output())
		r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
		require.Equal(t, 0, r.Code, "on: %s\n%s", on, r.Output())
		scans = append(scans, testenv.ScanItems(t, tg.client, table))
	}
	require.Len(t, scans[0], 4, "every database, with its server's portfolio")
	require.Equal(t, scans[0], scans[1])
}

// The hint for a missing table repeats the --table and --endpoint the user
// gave, so that it creates the table the command looked for; dump says the
// same as migrate.
func TestMissingTableHintKeepsOverrides(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
	config := clitest.RepoPath("configs/portfolios.yaml")
	endpoint := testenv.DynamoEndpoint(t)
	want := "dynafold: table " + tg.table + " does not exist; create it with: dynafold table create --config " + config +
		" --table " + tg.table + " --endpoint " + endpoint + "\n"
	r := tg.run(t, "", "migrate", "--progress", "none")
	require.Equal(t, 1, r.Code, r.Output())
	require.Equal(t, want, r.Stderr)
	r = clitest.Run(t, "", nil, "dump", "--config", config, "--endpoint", endpoint, "--table", tg.table)
	require.Equal(t, 1, r.Code, r.Output())
	require.Equal(t, want, r.Stderr)
	// From the environment, too.
	r = clitest.Run(t, "", []string{"DYNAFOLD_TABLE=" + tg.table, "DYNAFOLD_ENDPOINT=" + endpoint}, "dump", "--config", config)
	require.Equal(t, 1, r.Code, r.Output())
	require.Equal(t, want, r.Stderr)
}
