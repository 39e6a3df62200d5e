package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// A DynamoDB endpoint that refuses connections: each retry after the first
// attempt is one warning as it happens, and the run ends with one plain
// line naming the endpoint, the cause, the attempts and how to fail faster.
func TestUnreachableDynamoDB(t *testing.T) {
	t.Parallel()
	endpoint := "http://127.0.0.1:" + closedPort(t)
	config := clitest.RepoPath("configs/portfolios.yaml")
	d := testenv.Drivers()[0]
	dsn := d.NewDB(t)
	testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/portfolios/"+d.Name+".sql"))
	for _, args := range [][]string{
		{"table", "create", "--no-source", "--config", config, "--endpoint", endpoint},
		{"migrate", "--progress", "none", "--config", config, "--endpoint", endpoint, "--source-dsn", dsn},
	} {
		t.Run(args[0], func(t *testing.T) {
			r := clitest.Run(t, "", []string{"AWS_MAX_ATTEMPTS=3"}, args...)
			require.Equal(t, 1, r.Code, r.Output())
			logs, rest := logLines(t, r.Stderr)
			require.Equal(t, []string{
				"cannot reach DynamoDB at " + endpoint + ": connection refused; retrying in",
				"cannot reach DynamoDB at " + endpoint + ": connection refused; retrying in",
			}, trimAfter(messages(logs, "WARN"), " in"), "one warning per retry: %s", r.Stderr)
			require.Len(t, rest, 1, r.Stderr)
			require.Regexp(t, "^dynafold: cannot reach DynamoDB at "+regexp.QuoteMeta(endpoint)+
				`: connection refused \(3 attempts over \d+ s; set AWS_MAX_ATTEMPTS=2 to fail faster\)$`, rest[0])
		})
	}
}

// trimAfter cuts each message after the first occurrence of sep (the
// delays vary with jitter).
func trimAfter(msgs []string, sep string) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		if j := strings.Index(m, sep); j >= 0 {
			m = m[:j+len(sep)]
		}
		out[i] = m
	}
	return out
}

// A source that refuses connections, on both engines: the same pattern,
// with --source-attempts; and a database that does not exist is one clean
// line, without the driver's per-attempt repetitions or TLS fallback.
func TestUnreachableSource(t *testing.T) {
	t.Parallel()
	config := clitest.RepoPath("configs/portfolios.yaml")
	endpoint := testenv.DynamoEndpoint(t)
	port := closedPort(t)
	for name, dsn := range map[string]string{
		"postgres": fmt.Sprintf("postgres://app:secret@127.0.0.1:%s/inventory", port),
		"mysql":    fmt.Sprintf("app:secret@tcp(127.0.0.1:%s)/inventory", port),
	} {
		t.Run(name, func(t *testing.T) {
			engine := map[string]string{"postgres": "PostgreSQL", "mysql": "MySQL"}[name]
			addr := fmt.Sprintf("127.0.0.1:%s/inventory", port)
			r := clitest.Run(t, "", nil, "migrate", "--progress", "none", "--config", config, "--endpoint", endpoint, "--source-dsn", dsn, "--source-attempts", "3")
			require.Equal(t, 1, r.Code, r.Output())
			logs, rest := logLines(t, r.Stderr)
			require.Equal(t, []string{
				"cannot reach " + engine + " at " + addr + ": connection refused; retrying in",
				"cannot reach " + engine + " at " + addr + ": connection refused; retrying in",
			}, trimAfter(messages(logs, "WARN"), " in"), r.Stderr)
			require.Len(t, rest, 1, r.Stderr)
			require.Regexp(t, "^dynafold: cannot reach "+engine+" at "+regexp.QuoteMeta(addr)+
				`: connection refused \(3 attempts over \d+ s; set --source-attempts 1 to fail faster\)$`, rest[0])
			require.NotContains(t, r.Output(), "secret")
		})
	}

	t.Run("no such database", func(t *testing.T) {
		for _, d := range testenv.Drivers() {
			var dsn, want string
			switch d.Name {
			case "postgres":
				// Without sslmode=disable pgx tries TLS first, and the server
				// refuses it: that must not show.
				base := testenv.PostgresDSN(t)
				base = base[:strings.LastIndex(base, "/")]
				dsn = base + "/no_such_db_here"
				want = `FATAL: database "no_such_db_here" does not exist (SQLSTATE 3D000)`
			case "mysql":
				dsn = strings.TrimSuffix(testenv.MySQLDSN(t), "/") + "/no_such_db_here"
				want = `Error 1049 (42000): Unknown database 'no_such_db_here'`
			}
			r := clitest.Run(t, "", nil, "migrate", "--progress", "none", "--config", config, "--endpoint", endpoint, "--source-dsn", dsn)
			require.Equal(t, 1, r.Code, r.Output())
			lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
			require.Len(t, lines, 1, "one line per cause: %s", r.Stderr)
			require.Contains(t, lines[0], "dynafold: cannot connect to ")
			require.True(t, strings.HasSuffix(lines[0], "/no_such_db_here: "+want), lines[0])
			require.NotContains(t, strings.ToLower(r.Stderr), "tls")
		}
	})
}
