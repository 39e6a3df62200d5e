package main

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/endpointtest"
	"github.com/dynafold/dynafold/internal/tcpproxy"
	"github.com/dynafold/dynafold/internal/testenv"
)

// Real credentials never sign a request sent over plain HTTP to a host that
// is not loopback unless --allow-insecure-endpoint says so: the access key
// and session token would travel in cleartext. The refusal names the flag
// and none of the secrets; dynalite on loopback is unaffected, and with
// the flag the same endpoint works.
func TestInsecureEndpointIsRefused(t *testing.T) {
	t.Parallel()
	dynalite := testenv.DynamoEndpoint(t)
	client := testenv.DynamoClient(t)
	creds := []string{"AWS_ACCESS_KEY_ID=AKIAREALLOOKINGKEY42", "AWS_SECRET_ACCESS_KEY=the-secret-key-value", "AWS_SESSION_TOKEN=the-session-token-value", "AWS_REGION=us-east-1"}
	create := func(endpoint string, extra ...string) clitest.Result {
		table := testenv.NewTableName(t)
		testenv.DeleteTableOnCleanup(t, client, table)
		args := append([]string{"table", "create", "--no-source", "--config", clitest.RepoPath("configs/portfolios.yaml"), "--endpoint", endpoint, "--table", table}, extra...)
		return clitest.Run(t, "", creds, args...)
	}

	// dynalite on loopback, with real-looking credentials: as before.
	r := create(dynalite)
	require.Equal(t, exitOK, r.Code, r.Output())

	// The same dynalite reached at this machine's non-loopback address.
	ip := nonLoopbackIP(t)
	u, err := url.Parse(dynalite)
	require.NoError(t, err)
	proxy, err := tcpproxy.StartOn(net.JoinHostPort(ip, "0"), u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { proxy.Close() })
	remote := "http://" + proxy.Addr()
	r = create(remote)
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "--allow-insecure-endpoint")
	require.Contains(t, r.Stderr, "AKIA****")
	for _, secret := range []string{"AKIAREALLOOKINGKEY42", "the-secret-key-value", "the-session-token-value"} {
		require.NotContains(t, r.Output(), secret)
	}

	r = create(remote, "--allow-insecure-endpoint")
	require.Equal(t, exitOK, r.Code, r.Output())

	// The state table's own endpoint (--state-endpoint) is held to the
	// same rule, whatever the target's endpoint is.
	state := func(extra ...string) clitest.Result {
		table := testenv.NewTableName(t)
		testenv.DeleteTableOnCleanup(t, client, table)
		args := append([]string{"table", "create", "--state", "dynamodb://" + table, "--endpoint", dynalite, "--state-endpoint", remote}, extra...)
		return clitest.Run(t, "", creds, args...)
	}
	r = state()
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "--allow-insecure-endpoint")
	require.Contains(t, r.Stderr, remote)
	r = state("--allow-insecure-endpoint")
	require.Equal(t, exitOK, r.Code, r.Output())
}

// The rule holds for every client dynafold builds and every source of its
// endpoint: migrate's target at AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL
// or a profile's endpoint_url, export's --s3-endpoint and
// AWS_ENDPOINT_URL_S3, table import's client, and sync's state table. Each
// is refused (exit 2, naming the flag, the endpoint's password redacted)
// before any connection to the endpoint, which counts them; with
// --allow-insecure-endpoint the same command sends its first request
// there (and then fails on the endpoint's refusal, which is not asserted).
func TestInsecureEndpointFromAnySource(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	dsn := d.NewDB(t)
	testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/portfolios/"+d.Name+".sql"))
	creds := []string{"AWS_ACCESS_KEY_ID=" + endpointtest.Key, "AWS_SECRET_ACCESS_KEY=" + endpointtest.Secret,
		"AWS_SESSION_TOKEN=" + endpointtest.Token, "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true",
		// One attempt: the endpoint only ever refuses.
		"AWS_MAX_ATTEMPTS=1"}
	syncConfig := clitest.RepoPath("testdata/sync/portfolios.yaml")
	source := []string{"--config", syncConfig, "--source-dsn", dsn, "--table", testenv.NewTableName(t)}
	// Each case is given the endpoint's URL (with a password in it), and
	// returns the environment and arguments that point a client there.
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, endpoint string) (env, args []string)
	}{
		{"migrate, AWS_ENDPOINT_URL_DYNAMODB", func(t *testing.T, e string) ([]string, []string) {
			return []string{"AWS_ENDPOINT_URL_DYNAMODB=" + e}, append([]string{"migrate", "--progress", "none"}, source...)
		}},
		{"migrate, AWS_ENDPOINT_URL", func(t *testing.T, e string) ([]string, []string) {
			return []string{"AWS_ENDPOINT_URL=" + e}, append([]string{"migrate", "--progress", "none"}, source...)
		}},
		{"migrate, a profile's endpoint_url", func(t *testing.T, e string) ([]string, []string) {
			config := filepath.Join(t.TempDir(), "config")
			require.NoError(t, os.WriteFile(config, []byte("[profile remote]\nendpoint_url = "+e+"\n"), 0o600))
			return []string{"AWS_CONFIG_FILE=" + config, "AWS_PROFILE=remote"}, append([]string{"migrate", "--progress", "none"}, source...)
		}},
		{"export, --s3-endpoint", func(t *testing.T, e string) ([]string, []string) {
			return nil, append([]string{"export", "--progress", "none", "--to", "s3://exports/run/", "--s3-endpoint", e}, source...)
		}},
		{"export, AWS_ENDPOINT_URL_S3", func(t *testing.T, e string) ([]string, []string) {
			return []string{"AWS_ENDPOINT_URL_S3=" + e}, append([]string{"export", "--progress", "none", "--to", "s3://exports/run/"}, source...)
		}},
		{"table import, AWS_ENDPOINT_URL_DYNAMODB", func(t *testing.T, e string) ([]string, []string) {
			return []string{"AWS_ENDPOINT_URL_DYNAMODB=" + e}, []string{"table", "import", "--config", clitest.RepoPath("configs/portfolios.yaml"),
				"--table", testenv.NewTableName(t), "--from", "s3://exports/portfolios/"}
		}},
		{"sync --state dynamodb://, AWS_ENDPOINT_URL_DYNAMODB", func(t *testing.T, e string) ([]string, []string) {
			return []string{"AWS_ENDPOINT_URL_DYNAMODB=" + e}, append([]string{"sync", "--until-caught-up", "--progress", "none",
				"--state", "dynamodb://" + testenv.NewTableName(t)}, source...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := watchEndpoint(t)
			env, args := tc.setup(t, w.url)
			r := clitest.Run(t, "", append(creds, env...), args...)
			require.Equal(t, exitUsage, r.Code, r.Output())
			require.Contains(t, r.Stderr, "refusing to sign")
			require.Contains(t, r.Stderr, "--allow-insecure-endpoint")
			require.Contains(t, r.Stderr, w.redacted)
			for _, secret := range []string{endpointtest.Key, endpointtest.Secret, endpointtest.Token, endpointtest.Password} {
				require.NotContains(t, r.Output(), secret)
			}
			require.Zero(t, w.conns.Load(), "no connection before the refusal")

			r = clitest.Run(t, "", append(creds, env...), append(args, "--allow-insecure-endpoint")...)
			require.NotContains(t, r.Output(), "refusing to sign")
			require.Positive(t, w.conns.Load(), "allowed, the request is sent: %s", r.Output())
		})
	}
}

// An endpoint URL's userinfo is never printed: not in the hint that
// names the command creating a missing table, not in the refusal of a
// --state-endpoint without --state, not in the warning of each retry or the
// error of an endpoint that cannot be reached.
func TestEndpointUserinfoIsNotPrinted(t *testing.T) {
	t.Parallel()
	dynalite, err := url.Parse(testenv.DynamoEndpoint(t))
	require.NoError(t, err)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())
	withPassword := func(hostPort string) string { return "http://admin:" + endpointtest.Password + "@" + hostPort }
	config := clitest.RepoPath("configs/portfolios.yaml")
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		code int
		want []string
	}{
		{name: "a missing table's hint", code: exitFailure,
			args: []string{"dump", "--config", config, "--endpoint", withPassword(dynalite.Host), "--table", testenv.NewTableName(t)},
			want: []string{"create it with: dynafold table create", "--endpoint http://xxxxx@" + dynalite.Host}},
		{name: "--state-endpoint without --state", code: exitUsage,
			args: []string{"table", "create", "--config", config, "--no-source", "--endpoint", withPassword(dynalite.Host), "--state-endpoint", withPassword(dynalite.Host)},
			want: []string{"--state-endpoint http://xxxxx@" + dynalite.Host + " is where"}},
		{name: "an endpoint that cannot be reached", code: exitFailure, env: []string{"AWS_MAX_ATTEMPTS=2"},
			args: []string{"dump", "--config", config, "--endpoint", withPassword(closedAddr), "--table", "unreached"},
			want: []string{"cannot reach DynamoDB at http://xxxxx@" + closedAddr + ": connection refused; retrying",
				"dynafold: cannot reach DynamoDB at http://xxxxx@" + closedAddr + ": connection refused (2 attempts"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := clitest.Run(t, "", tc.env, tc.args...)
			require.Equal(t, tc.code, r.Code, r.Output())
			for _, w := range tc.want {
				require.Contains(t, r.Stderr, w)
			}
			require.NotContains(t, r.Output(), endpointtest.Password)
		})
	}
}

// endpointWatch is an endpoint on this machine's non-loopback address
// that counts the connections it accepts and refuses every request as
// AWS refuses an unknown access key.
type endpointWatch struct {
	url      string // with a password in it
	redacted string // as dynafold prints it
	conns    atomic.Int64
}

func watchEndpoint(t *testing.T) *endpointWatch {
	w := &endpointWatch{}
	ln, err := net.Listen("tcp", net.JoinHostPort(nonLoopbackIP(t), "0"))
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		rw.Header().Set("Content-Type", "application/x-amz-json-1.0")
		rw.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(rw, `{"__type":"com.amazon.coral.service#UnrecognizedClientException","message":"The security token included in the request is invalid."}`)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			w.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	w.url = "http://admin:" + endpointtest.Password + "@" + host
	w.redacted = "http://xxxxx@" + host
	return w
}

// nonLoopbackIP is an address of this machine that is not loopback.
func nonLoopbackIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	msg := "this machine has no IPv4 address other than loopback, through which to reach dynalite as a remote endpoint"
	if testenv.Integration() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
