package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/tcpproxy"
	"github.com/dynafold/dynafold/internal/testenv"
)

// startProxy forwards a local port to addr (host:port) until the test
// ends or the proxy is closed.
func startProxy(t *testing.T, addr string) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.Start(addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// DynamoDB going away in the middle of a run (the proxy in front of it
// stops): one warning per retry as it happens, for all writers together,
// and the run ends with the same one plain line as when the endpoint was
// never reachable, plus that the checkpoint is kept; run again, it
// resumes and completes.
func TestDynamoDBGoesAwayMidRun(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	s := newScaleRun(t, d)
	u, err := url.Parse(testenv.DynamoEndpoint(t))
	require.NoError(t, err)
	proxy := startProxy(t, u.Host)
	endpoint := "http://" + proxy.Addr()
	flags := append([]string{}, s.flags...)
	flags[5] = endpoint
	require.Equal(t, "--endpoint", flags[4])

	done, stdout, stderr := startMigrateEnv(t, s.dir, []string{"AWS_MAX_ATTEMPTS=3"}, flags...)
	waitForFirstItem(t, s.client, s.table, done)
	require.NoError(t, proxy.Close())
	require.Equal(t, exitInterrupted, exitOf(<-done), stderr.String())
	requireGoneMidRun(t, stderr.String(), "DynamoDB", endpoint, "set AWS_MAX_ATTEMPTS=2 to fail faster")
	// The summary says the run failed, and what the checkpoint holds.
	require.Regexp(t, `(?m)^run failed in \d+\.\ds `, stdout.String())
	require.Contains(t, stdout.String(), "will be read again on resume")

	r := clitest.Run(t, s.dir, nil, append([]string{"migrate", "--progress", "none"}, s.flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Contains(t, r.Stderr, "dynafold: resuming run")
	requireScaleTable(t, s.client, s.table, faultPortfolios)
}

// The source going away in the middle of a run, on both engines: the
// readers whose connections broke say so, then one warning per retry of
// the connection, for all readers together, and one plain line at the end.
func TestSourceGoesAwayMidRun(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			s := newScaleRun(t, d)
			host := dsnHost(t, d.Name, s.dsn)
			proxy := startProxy(t, host)
			dsn := strings.Replace(s.dsn, host, proxy.Addr(), 1)
			flags := append([]string{}, s.flags...)
			require.Equal(t, "--source-dsn", flags[2])
			flags[3] = dsn

			done, _, stderr := startMigrateEnv(t, s.dir, nil, append(flags, "--source-attempts", "3")...)
			waitForFirstItem(t, s.client, s.table, done)
			require.NoError(t, proxy.Close())
			require.Equal(t, exitInterrupted, exitOf(<-done), stderr.String())
			engine := map[string]string{"postgres": "PostgreSQL", "mysql": "MySQL"}[d.Name]
			addr := proxy.Addr() + "/" + dbName(t, d.Name, s.dsn)
			requireGoneMidRun(t, stderr.String(), engine, addr, "set --source-attempts 1 to fail faster")
		})
	}
}

// requireGoneMidRun checks the stderr of a run whose service (DynamoDB or
// the source, at addr) went away: the retries as warnings, attempts 2 and
// 3 of 3, and one plain line at the end.
func requireGoneMidRun(t *testing.T, stderr, service, addr, hint string) {
	t.Helper()
	logs, rest := logLines(t, stderr)
	// The MySQL driver prints the errors it returns on its own ("[mysql]
	// packets.go: unexpected EOF"); silencing it (mysql.SetLogger) upset
	// TestSyncMySQLPurgedBinlogIsRefused, so those lines are let be here.
	rest = slices.DeleteFunc(rest, func(l string) bool { return strings.HasPrefix(l, "[mysql] ") })
	prefix := "cannot reach " + service + " at " + addr + ": "
	var retries []string
	for _, m := range messages(logs, "WARN") {
		switch {
		case strings.HasPrefix(m, prefix):
			retries = append(retries, m)
		case m == "source connection lost; reading again after the last row" && service != "DynamoDB":
			// a reader whose connection broke, before any reconnection
		default:
			t.Fatalf("unexpected warning %q in:\n%s", m, stderr)
		}
	}
	require.Len(t, retries, 2, "one warning per retry: %s", stderr)
	for i, m := range retries {
		require.Regexp(t, "^"+regexp.QuoteMeta(prefix)+`connection (refused|reset); retrying in \S+ \(attempt `+fmt.Sprint(i+2)+` of 3\)$`, m)
	}
	require.Len(t, rest, 1, "one plain line: %s", stderr)
	require.Regexp(t, "^dynafold: "+regexp.QuoteMeta(prefix)+`connection refused \(3 attempts over \d+ s; `+regexp.QuoteMeta(hint)+`\); checkpoint saved, run again to resume$`, rest[0])
}

// startMigrateEnv starts `dynafold migrate` in dir with env added, and
// returns a channel that receives its exit, and its stdout and stderr.
func startMigrateEnv(t *testing.T, dir string, env []string, args ...string) (<-chan error, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := clitest.Command(context.Background(), t, dir, env, append([]string{"migrate", "--progress", "none"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return done, &stdout, &stderr
}

// dsnHost returns the host:port of a test DSN.
func dsnHost(t *testing.T, driver, dsn string) string {
	t.Helper()
	re := regexp.MustCompile(`@([^/]+)/`)
	if driver == "mysql" {
		re = regexp.MustCompile(`tcp\(([^)]+)\)`)
	}
	m := re.FindStringSubmatch(dsn)
	require.NotNil(t, m, "no host in %s", dsn)
	return m[1]
}

// dbName returns the database a test DSN names.
func dbName(t *testing.T, driver, dsn string) string {
	t.Helper()
	m := regexp.MustCompile(`/([^/?]+)(\?|$)`).FindStringSubmatch(dsn)
	require.NotNil(t, m, "no database in %s", dsn)
	return m[1]
}
