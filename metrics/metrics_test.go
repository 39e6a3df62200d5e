package metrics

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// /readyz says what the run last said; /healthz fails only once the work
// loop has not iterated for the stall timeout; /metrics carries the
// series, the runtime's and the process's.
func TestEndpoints(t *testing.T) {
	reg := NewRegistry()
	h := NewHealth(time.Minute)
	now := time.Now()
	h.now = func() time.Time { return now }
	h.Beat()
	lag := 0.0
	s := NewSync(reg, "portfolios", SyncSources{
		Lag: func() float64 { return lag }, Behind: func() float64 { return 42 },
		Throttled: func() float64 { return 3 }, RequestRetries: func() float64 { return 7 },
	})
	srv, err := Serve("127.0.0.1:0", reg, h, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer srv.Close()
	base := "http://" + srv.Addr()

	code, body := get(t, base+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "starting")
	h.SetReady(true, "")
	code, _ = get(t, base+"/readyz")
	require.Equal(t, http.StatusOK, code)
	h.SetReady(false, "reconnecting: the source is unavailable")
	code, body = get(t, base+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "reconnecting")

	code, _ = get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code)
	now = now.Add(2 * time.Minute)
	code, body = get(t, base+"/healthz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "stalled")
	h.Beat()
	code, _ = get(t, base+"/healthz")
	require.Equal(t, http.StatusOK, code)

	s.SetState(StateReconnecting)
	s.SetConnected(false)
	s.Applied(2, 5, 4, 1)
	s.Retry(RetrySource)
	lag = 12.5
	_, body = get(t, base+"/metrics")
	for _, want := range []string{
		`dynafold_sync_state{state="reconnecting",table="portfolios"} 1`,
		`dynafold_sync_state{state="streaming",table="portfolios"} 0`,
		`dynafold_source_connected{table="portfolios"} 0`,
		`dynafold_sync_changes_applied_total{table="portfolios"} 5`,
		`dynafold_sync_transactions_applied_total{table="portfolios"} 2`,
		`dynafold_items_written_total{table="portfolios"} 4`,
		`dynafold_items_deleted_total{table="portfolios"} 1`,
		`dynafold_sync_lag_seconds{table="portfolios"} 12.5`,
		`dynafold_sync_behind_bytes{table="portfolios"} 42`,
		`dynafold_requests_throttled_total{table="portfolios"} 3`,
		`dynafold_retries_total{kind="dynamodb_request",table="portfolios"} 7`,
		`dynafold_retries_total{kind="source_reconnect",table="portfolios"} 1`,
		"go_goroutines", "process_cpu_seconds_total",
	} {
		require.True(t, strings.Contains(body, want), "missing %s in:\n%s", want, body)
	}
}

// The series methods do nothing on a nil *Sync (no --metrics-addr).
func TestNilSyncIsNoOp(t *testing.T) {
	var s *Sync
	s.SetState(StateStreaming)
	s.SetConnected(true)
	s.Applied(1, 1, 1, 1)
	s.Loaded(1)
	s.Event(time.Now())
	s.RetainedWAL(1)
	s.Retry(RetryRound)
	var h *Health
	h.Beat()
	h.SetReady(true, "")
}
