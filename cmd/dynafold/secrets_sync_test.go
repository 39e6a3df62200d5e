package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
)

// The runs of TestSecrets that need more than one command line: a sync
// that a monitor scrapes while it runs, and table import, which needs an
// endpoint that implements ImportTable.

// checkSync runs sync against working services with --metrics-addr,
// searches what /metrics, /healthz and /readyz answer from its start until
// it streams, stops it (exit 4: interrupted, resumable), and cleans up
// after it with sync cleanup.
func (h *secretsHarness) checkSync(t *testing.T) {
	addr := freeAddr(t)
	state, slot := h.path("ok.sync.json"), h.slot("ok")
	cleanup := append([]string{"sync", "cleanup", "--checkpoint", state, "--slot", slot, "--report", h.path("ok_sync_cleanup.report.json")}, h.common(h.endpoint)...)
	cleanup = append(cleanup, "--source-dsn", h.forms[0].dsn)
	// Whatever becomes of the test, the slot does not outlive it.
	t.Cleanup(func() { clitest.Run(t, h.work, h.aws.env(), cleanup...) })

	args := append([]string{"sync", "--progress", "json", "--status-every", "1s", "--metrics-addr", addr, "--checkpoint", state, "--slot", slot,
		"--report", h.path("ok_sync.report.json")}, h.common(h.endpoint)...)
	r := secretsCase("ok/sync", only(exitInterrupted), `"event":"sync_status"`, append(args, "--source-dsn", h.forms[0].dsn)...).
		writes("ok_sync.report.json", "ok.sync.json")
	p := h.start(t, r)
	scrapes := 0
	deadline := time.Now().Add(2 * time.Minute)
	for ready := false; !ready; time.Sleep(50 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "sync did not become ready; its output:\n%s%s", p.stdout.String(), p.stderr.String())
		bodies, ok := h.scrapeService(t, addr)
		if bodies == nil {
			continue // not listening yet
		}
		scrapes++
		ready = ok && strings.Contains(bodies["/metrics"], "dynafold_sync_")
	}
	// Once more, streaming, with a status line or two behind it.
	time.Sleep(1500 * time.Millisecond)
	bodies, ok := h.scrapeService(t, addr)
	require.True(t, ok, "sync is ready: %v", bodies)
	require.Contains(t, bodies["/healthz"], "ok: last iteration")
	require.Equal(t, "ready\n", bodies["/readyz"])
	require.Contains(t, bodies["/metrics"], `dynafold_sync_state{state="streaming"`)
	t.Logf("scraped sync's endpoints %d times while it started", scrapes+1)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	h.finish(t, p)
	h.check(t, secretsCase("ok/sync cleanup", only(exitOK), `removed`, cleanup...).writes("ok_sync_cleanup.report.json"))
}

// scrapeService reads /metrics, /healthz and /readyz once, searching each
// answer for secrets, and reports whether /readyz said ready; the answers
// are nil while nothing listens.
func (h *secretsHarness) scrapeService(t *testing.T, addr string) (map[string]string, bool) {
	t.Helper()
	bodies := map[string]string{}
	ready := false
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return nil, false
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		h.assertNoSecrets(t, "sync's "+path, string(body))
		bodies[path] = string(body)
		if path == "/readyz" {
			ready = resp.StatusCode == http.StatusOK
		}
	}
	return bodies, ready
}

// checkTableImport runs table import against an endpoint that implements
// it (importStub) and against one that rejects the credentials.
func (h *secretsHarness) checkTableImport(t *testing.T, rejecting, echoed string) {
	stub := httptest.NewServer(&importStub{})
	t.Cleanup(stub.Close)
	h.check(t, h.tableImport("ok", stub.URL, only(exitOK), `"status": "COMPLETED"`))
	h.check(t, h.tableImport("dynamodb rejects", rejecting, only(exitFailure), echoed))
}

// checkTableImportDown runs table import against an endpoint that is not
// listening.
func (h *secretsHarness) checkTableImportDown(t *testing.T, down string) {
	h.check(t, h.tableImport("dynamodb down", down, only(exitFailure), `connection refused`).withEnv("AWS_MAX_ATTEMPTS=2"))
}

func (h *secretsHarness) tableImport(tag, endpoint string, codes []int, want string) secretsRun {
	report := h.path(slug(tag) + "_table_import.report.json")
	args := []string{"table", "import", "--config", clitest.RepoPath("configs/portfolios.yaml"), "--endpoint", endpoint,
		"--table", fmt.Sprintf("%s_imported", h.table), "--from", "s3://dfsec/export/", "--poll", "1ms", "--output", "json",
		"--log-level", "debug", "--source-dsn", h.forms[0].dsn, "--report", report}
	return secretsCase(tag+"/table import", codes, want, args...).writes(report)
}
