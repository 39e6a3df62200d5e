package main

import (
	"net"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
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
