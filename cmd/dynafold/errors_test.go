package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// Every malformed mapping of the corpus fails before touching any service,
// with exit code 2 and the message that names the key path.
func TestBrokenMappingsExitTwo(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(clitest.RepoPath("testdata/mappings/broken/*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 20)
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".err")
			require.NoError(t, err)
			cmds := [][]string{{"table", "create"}, {"migrate"}}
			if strings.Contains(f, "unbound-var") {
				// Variables bind source filters; table create reads no source.
				cmds = cmds[1:]
			}
			flags := []string{"--endpoint", "http://127.0.0.1:1", "--source-dsn", "postgres://x@127.0.0.1:1/x"}
			if strings.Contains(f, "missing-driver") {
				// A postgres:// DSN would name the driver; the file's own
				// DSN, which names none, is the mistake.
				flags = flags[:2]
			}
			for _, cmd := range cmds {
				// No endpoint or database is reachable at these addresses:
				// a mapping error must be reported before any connection.
				r := clitest.Run(t, "", nil, append(append(cmd, "--config", f), flags...)...)
				require.Equal(t, exitUsage, r.Code, r.Output())
				require.Contains(t, r.Stderr, strings.TrimSpace(string(want)))
			}
		})
	}
}

// Bad flags fail before touching any service (none answers at these
// addresses), with exit code 2 and a message naming the flag.
func TestBadFlagsExitTwo(t *testing.T) {
	t.Parallel()
	config := clitest.RepoPath("configs/portfolios.yaml")
	unreachable := []string{"--config", config, "--endpoint", "http://127.0.0.1:1", "--source-dsn", "postgres://x@127.0.0.1:1/x"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"migrate", "--concurrency", "0"}, "--concurrency and --writers must be at least 1"},
		{[]string{"migrate", "--writers", "abc"}, `invalid argument "abc" for "--writers" flag`},
		{[]string{"migrate", "--page-size", "-1"}, "--page-size must be at least 1, not -1"},
		{[]string{"migrate", "--progress", "fancy"}, `--progress must be auto, tty, json or none, not "fancy"`},
		{[]string{"migrate", "--max-wcu", "-5"}, "--max-wcu must not be negative, not -5"},
		{[]string{"migrate", "--max-rejects", "-2"}, "--max-rejects must be -1 (no limit) or more, not -2"},
		{[]string{"migrate", "--grace", "-1s"}, "--grace must not be negative, not -1s"},
		{[]string{"migrate", "--var", "tenant"}, `--var "tenant": expected NAME=VALUE`},
		{[]string{"verify", "--output", "xml"}, `--output must be text, json or markdown, not "xml"`},
		{[]string{"verify", "--sample", "2"}, "--sample must be a fraction in (0, 1], not 2"},
		{[]string{"plan", "--sample", "0"}, "--sample must be a fraction in (0, 1], not 0"},
		{[]string{"diff", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "dynafold"`},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			args := c.args
			if len(args) > 1 || args[0] != "frobnicate" {
				args = append(append([]string{}, args...), unreachable...)
			}
			r := clitest.Run(t, "", nil, args...)
			require.Equal(t, exitUsage, r.Code, r.Output())
			require.Contains(t, r.Stderr, c.want)
		})
	}
	r := clitest.Run(t, "", nil, "migrate")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "--config is required")
}

func writeMapping(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mapping.yaml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	return p
}

// Columns are checked against the source schema: a typo is exit 2 naming
// the key path, the column and the table.
func TestUnknownColumnExitTwo(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/portfolios/"+d.Name+".sql"))
			cfg := writeMapping(t, `
version: 1
source: {driver: postgres}
target: {table: portfolios, key: {pk: PK, sk: SK}}
entities:
  server:
    from: servers
    key: {pk: "${portfolio_id}", sk: "SERVER#${hostnme}"}
`)
			r := clitest.Run(t, "", nil, "migrate", "--config", cfg, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t))
			require.Equal(t, exitUsage, r.Code, r.Output())
			require.Contains(t, r.Stderr, `entities.server.key.sk: unknown column "hostnme" in table servers`)
		})
	}
}

// A NULL in the table's own key rejects the row, naming the entity, the
// source primary key and the key attribute; the run fails (exit 1) under
// the default policy.
func TestNullKeyNamesTheRow(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.ExecSQL(t, d.Name, dsn, `CREATE TABLE parts (id int PRIMARY KEY, bin varchar(20) NULL);
				INSERT INTO parts VALUES (1, 'A1'), (2, NULL), (3, 'C3');`)
			cfg := writeMapping(t, `
version: 1
source: {driver: postgres}
target: {table: parts, key: {pk: PK, sk: SK}}
entities:
  part:
    from: parts
    key: {pk: "BIN#${bin}", sk: "PART#${id}"}
`)
			client := testenv.DynamoClient(t)
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			flags := []string{"--config", cfg, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
			require.Equal(t, 0, clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...).Code)
			r := clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
			require.Equal(t, exitFailure, r.Code, r.Output())
			require.Contains(t, r.Stderr, `entity part, row id=2: PK is NULL: template "BIN#${bin}" references a NULL column`)
		})
	}
}

// Two rows producing the same key is an error naming both rows, never a
// silent overwrite. The mapping forgets the server id in the sort key, so
// the two servers of a portfolio produce one key. plan's key.incomplete
// stops migrate before it starts (exit 2); acknowledged wrongly in
// lint.ignore, the run itself still catches the collision.
func TestKeyCollisionNamesBothRows(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/portfolios/"+d.Name+".sql"))
			cfg := writeMapping(t, `
version: 1
source: {driver: postgres}
target: {table: portfolios, key: {pk: PK, sk: SK}}
entities:
  server:
    from: servers
    key: {pk: "${portfolio_id}", sk: "SERVER"}
`)
			client := testenv.DynamoClient(t)
			table := testenv.NewTableName(t)
			testenv.DeleteTableOnCleanup(t, client, table)
			flags := []string{"--config", cfg, "--source-dsn", dsn, "--endpoint", testenv.DynamoEndpoint(t), "--table", table}
			// table create checks the mapping against the source as plan does.
			r := clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
			require.Equal(t, exitUsage, r.Code, r.Output())
			require.Contains(t, r.Stderr, "(key.incomplete)")
			require.Equal(t, 0, clitest.Run(t, "", nil, append([]string{"table", "create", "--no-source"}, flags...)...).Code)
			r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
			require.Equal(t, exitUsage, r.Code, r.Output())
			require.Contains(t, r.Stderr, "(key.incomplete)")

			acked := writeMapping(t, string(must(os.ReadFile(cfg)))+"lint: {ignore: [key.incomplete]}\n")
			flags[1] = acked
			r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none"}, flags...)...)
			require.Equal(t, exitFailure, r.Code, r.Output())
			require.Regexp(t, `entity server, row id="(\w+)": key collision: item key \(PK "[12]", SK "SERVER"\) is also produced by entity server, row id="(\w+)"; one item would silently overwrite the other`, r.Stderr)
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
