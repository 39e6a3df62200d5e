package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// Sync as a service: it rides out what a source and DynamoDB do over the
// weeks of a cutover, and a monitor sees it. These tests restart, stop and
// replace servers of their own (testenv.StartPostgres, StartMariaDB), so
// that the servers every other test shares stay up.

// serviceSync is a running sync of the portfolios design with its metrics
// endpoint, on a source of the test's own.
type serviceSync struct {
	*syncDesign
	cmd     *exec.Cmd
	out     *syncBuffer
	metrics string
	watch   *watcher
}

func startServiceSync(t *testing.T, d testenv.Driver, extra ...string) *serviceSync {
	t.Helper()
	s := &serviceSync{syncDesign: newSyncDesign(t, d, "portfolios", "testdata/sync/portfolios.yaml"), metrics: freeAddr(t)}
	s.run(t, extra...)
	return s
}

// run starts the sync in the background and waits until it is ready.
func (s *serviceSync) run(t *testing.T, extra ...string) {
	t.Helper()
	s.cmd, s.out = s.start(t, append([]string{"--metrics-addr", s.metrics, "--log-level", "info", "--status-every", "1s"}, extra...)...)
	t.Cleanup(func() {
		if t.Failed() && s.cmd.ProcessState == nil {
			// What the sync said last, and where it was: its goroutines.
			said := s.out.String()
			t.Logf("sync's last output:\n%s", lastLines(said, 40))
			_ = s.cmd.Process.Signal(syscall.SIGQUIT)
			time.Sleep(time.Second)
			t.Logf("sync's goroutines:\n%s", lastLines(strings.TrimPrefix(s.out.String(), said), 400))
		}
		_ = s.cmd.Process.Kill()
	})
	s.watch = watch(t, s.metrics)
	s.watch.waitReady(t, time.Time{}, 2*time.Minute)
}

// alive requires the sync process to be running still.
func (s *serviceSync) alive(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.Signal(0)), "sync is running; its output:\n%s", s.out.String())
	require.Nil(t, s.cmd.ProcessState, "sync is running; its output:\n%s", s.out.String())
}

// appliedSince waits until the sync has applied more changes than it had
// at the first observation after at: streaming goes on.
func (s *serviceSync) appliedSince(t *testing.T, at time.Time) {
	t.Helper()
	require.Eventually(t, func() bool {
		seen := s.watch.since(at)
		return len(seen) > 1 && seen[len(seen)-1].applied > seen[0].applied
	}, 2*time.Minute, 100*time.Millisecond, "changes are applied after %s; output:\n%s", at.Format(time.TimeOnly), lastLines(s.out.String(), 20))
}

// faultSeen waits until, after at, the watcher saw the sync not ready,
// then ready again, and requires that it saw the source disconnected.
func (s *serviceSync) faultSeen(t *testing.T, at time.Time) {
	t.Helper()
	var disconnected bool
	seen := func() bool {
		down := false
		for _, o := range s.watch.since(at) {
			if o.connected == 0 {
				disconnected = true
			}
			switch {
			case !o.ready:
				down = true
			case down:
				return true
			}
		}
		return false
	}
	require.Eventually(t, seen, 2*time.Minute, 50*time.Millisecond,
		"/readyz went not ready after %s, then ready again; output:\n%s", at.Format(time.TimeOnly), lastLines(s.out.String(), 30))
	require.True(t, disconnected, "dynafold_source_connected was 0 after %s", at.Format(time.TimeOnly))
}

// stop ends the sync with SIGTERM: exit 4, resumable.
func (s *serviceSync) stop(t *testing.T) {
	t.Helper()
	s.watch.close()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	err := s.cmd.Wait()
	require.Error(t, err)
	require.Equal(t, exitInterrupted, s.cmd.ProcessState.ExitCode(), s.out.String())
}

// The source restarts (PostgreSQL: pg_ctl restart -m fast twice, the
// walsender and the query connections terminated; MariaDB: shut down and
// started again) during a churn workload: sync stays up, goes not ready
// and reports the source disconnected meanwhile, streams again, and once
// caught up the table is what a fresh migrate writes.
func TestSyncRidesOutSourceRestarts(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		srv := testenv.StartPostgres(t)
		s := startServiceSync(t, testenv.Driver{Name: "postgres", NewDB: srv.NewDB})
		c := startChurn(t, "postgres", s.dsn, 1)
		s.appliedSince(t, time.Now())
		for i := 0; i < 2; i++ {
			at := time.Now()
			srv.Restart(t)
			t.Logf("restart %d: %d transactions committed, %d failed", i+1, c.committed.Load(), c.failed.Load())
			s.faultSeen(t, at)
			s.appliedSince(t, time.Now())
		}
		for _, app := range []string{"dynafold-sync", "dynafold"} {
			at := time.Now()
			killed := testenv.Rows(t, "postgres", srv.DSN("postgres"),
				"SELECT count(*) FROM (SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = '"+app+"') k WHERE ok")
			t.Logf("terminated %s backends of %s", killed[0][0], app)
			require.NotEqual(t, "0", killed[0][0], "sync holds %s connections", app)
			s.appliedSince(t, at)
		}
		c.halt()
		s.alive(t)
		s.stop(t)
		out := s.out.String()
		require.Contains(t, out, "the source is unavailable; sync waits")
		require.Contains(t, out, "the source is back; sync goes on")
		s.catchUp(t)
		s.requireConverged(t)
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		srv := testenv.StartMariaDB(t)
		s := startServiceSync(t, testenv.Driver{Name: "mysql", NewDB: srv.NewDB})
		c := startChurn(t, "mysql", s.dsn, 2)
		s.appliedSince(t, time.Now())
		at := time.Now()
		srv.Stop(t)
		time.Sleep(time.Second)
		srv.Start(t)
		t.Logf("restart: %d transactions committed, %d failed", c.committed.Load(), c.failed.Load())
		s.faultSeen(t, at)
		s.appliedSince(t, time.Now())
		c.halt()
		s.alive(t)
		m, err := scrape(s.metrics)
		require.NoError(t, err)
		retries, _ := sample(m, "dynafold_retries_total", `kind="source_reconnect"`)
		require.Positive(t, retries, "the reconnections are counted")
		s.stop(t)
		s.catchUp(t)
		s.requireConverged(t)
	})
}

// The series a monitor reads exist, and say what they should: changes
// applied grow under a workload, the state is streaming, and the lag
// returns to near 0 once caught up.
func TestSyncMetricsSeries(t *testing.T) {
	t.Parallel()
	s := startServiceSync(t, pgOnly()[0])
	m, err := scrape(s.metrics)
	require.NoError(t, err)
	for _, name := range []string{"dynafold_sync_lag_seconds", "dynafold_sync_behind_bytes", "dynafold_sync_changes_applied_total",
		"dynafold_sync_transactions_applied_total", "dynafold_items_written_total", "dynafold_items_deleted_total",
		"dynafold_requests_throttled_total", "dynafold_retries_total", "dynafold_source_connected", "dynafold_sync_last_event_timestamp_seconds",
		"dynafold_sync_retained_wal_bytes", "dynafold_sync_state", "dynafold_sync_schema_changes_total", "go_goroutines", "process_cpu_seconds_total"} {
		_, ok := sample(m, name)
		require.True(t, ok, "series %s", name)
	}
	state, _ := sample(m, "dynafold_sync_state", `state="streaming"`)
	require.Equal(t, 1.0, state)
	for k := range m {
		require.NotContains(t, k, "dynafold:", "no secret in a label")
		require.NotContains(t, k, s.dsn)
	}

	start := time.Now()
	c := startChurn(t, "postgres", s.dsn, 3)
	s.appliedSince(t, start)
	c.halt()
	require.Eventually(t, func() bool {
		m, err := scrape(s.metrics)
		if err != nil {
			return false
		}
		lag, _ := sample(m, "dynafold_sync_lag_seconds")
		return lag < 2
	}, time.Minute, 200*time.Millisecond, "the lag is near 0 once caught up")
	s.stop(t)
	s.catchUp(t)
	s.requireConverged(t)
}

// statusLine finds the last sync_status line of out with the state.
func statusLine(out, state string) string {
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], `"event":"sync_status"`) && strings.Contains(lines[i], fmt.Sprintf(`"state":%q`, state)) {
			return lines[i]
		}
	}
	return ""
}

// A fault that outlasts --give-up-after ends sync with exit 4, its state
// saved: here the source behind a proxy that stops accepting connections.
func TestSyncGivesUpAfter(t *testing.T) {
	t.Parallel()
	d := pgOnly()[0]
	sd := newSyncDesign(t, d, "portfolios", "testdata/sync/portfolios.yaml")
	host := dsnHost(t, d.Name, sd.dsn)
	proxy := startProxy(t, host)
	sd.setDSN(strings.Replace(sd.dsn, host, proxy.Addr(), 1))
	s := &serviceSync{syncDesign: sd, metrics: freeAddr(t)}
	s.run(t, "--give-up-after", "2s")
	require.NoError(t, proxy.Pause())
	err := s.cmd.Wait()
	require.Error(t, err)
	require.Equal(t, exitInterrupted, s.cmd.ProcessState.ExitCode(), s.out.String())
	require.Regexp(t, `the source has been unavailable for \d+s, longer than --give-up-after 2s`, s.out.String())
	require.NoError(t, proxy.Resume())
	s.catchUp(t)
	s.requireConverged(t)
}

// migrate serves its progress on --metrics-addr too: rows read and items
// written per entity, the ETA, throttling and retries.
func TestMigrateServesMetrics(t *testing.T) {
	t.Parallel()
	tg := newScaleTarget(t, testenv.Drivers()[0], 100) // 1,000 rows and items
	addr := freeAddr(t)
	// 200 write units a second: several seconds to scrape in.
	cmd := clitest.Command(context.Background(), t, "", nil, append([]string{"migrate", "--progress", "none", "--max-wcu", "200", "--metrics-addr", addr}, tg.flags...)...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	var m map[string]float64
	require.Eventually(t, func() bool {
		var err error
		m, err = scrape(addr)
		if err != nil {
			return false
		}
		v, _ := sample(m, "dynafold_items_written_total", `entity="database"`)
		return v > 0
	}, time.Minute, 50*time.Millisecond, "items written are counted")
	for _, name := range []string{"dynafold_rows_read_total", "dynafold_rows_done_total", "dynafold_rows_rejected_total", "dynafold_eta_seconds",
		"dynafold_requests_throttled_total", "dynafold_retries_total", "process_cpu_seconds_total"} {
		_, ok := sample(m, name)
		require.True(t, ok, "series %s", name)
	}
	ok, err := ready(addr)
	require.NoError(t, err)
	require.True(t, ok, "a running migrate is ready")
	require.NoError(t, cmd.Wait())
}
