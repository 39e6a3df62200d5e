package main

import (
	"math"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/tcpproxy"
	"github.com/dynafold/dynafold/internal/testenv"
)

// setDSN makes the design's commands, and its fresh migrate, read the
// source at dsn (a proxy in front of it, a promoted standby).
func (sd *syncDesign) setDSN(dsn string) {
	sd.dsn = dsn
	for i := range sd.flags {
		if sd.flags[i] == "--source-dsn" {
			sd.flags[i+1] = dsn
		}
	}
}

// DynamoDB refuses every connection for a minute during a churn workload:
// sync stays up and not ready, confirms nothing (the slot's
// confirmed_flush_lsn stands still), its lag grows all along, and once
// DynamoDB is back the table converges.
func TestSyncWaitsOutDynamoDBOutage(t *testing.T) {
	t.Parallel()
	outage := time.Minute
	d := pgOnly()[0]
	u, err := url.Parse(testenv.DynamoEndpoint(t))
	require.NoError(t, err)
	proxy, err := tcpproxy.Start(u.Host)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	s := startServiceSync(t, d, "--endpoint", "http://"+proxy.Addr())
	c := startChurn(t, "postgres", s.dsn, 4)
	s.appliedSince(t, time.Now())

	slotLSN := func() string {
		rows := testenv.Rows(t, "postgres", s.dsn, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '"+slotName(s.table)+"'")
		require.Len(t, rows, 1)
		return rows[0][0]
	}
	// The lag as served; a scrape that fails (a loaded machine) reads as
	// not caught up, so that a wait asks again.
	lag := func() float64 {
		m, err := scrape(s.metrics)
		if err != nil {
			t.Logf("scraping %s: %v", s.metrics, err)
			return math.Inf(1)
		}
		v, _ := sample(m, "dynafold_sync_lag_seconds")
		return v
	}
	require.NoError(t, proxy.Pause())
	down := time.Now()
	// A round in flight when the endpoint went may still have been
	// confirmed: the slot is read from a few seconds in.
	time.Sleep(3 * time.Second)
	held := slotLSN()
	early := lag()
	for time.Since(down) < outage {
		time.Sleep(time.Second)
		require.Equal(t, held, slotLSN(), "nothing is confirmed while DynamoDB is away")
		if ok, err := ready(s.metrics); err == nil {
			require.False(t, ok, "not ready while DynamoDB is away")
		}
	}
	late := lag()
	require.False(t, math.IsInf(late, 1), "the lag is served at the end of the outage")
	t.Logf("lag %.1fs at 3 s into the outage, %.1fs at its end; %d transactions committed meanwhile", early, late, c.committed.Load())
	require.Greater(t, late, early+outage.Seconds()/2, "the lag grows while DynamoDB is refused")
	s.alive(t)
	require.NoError(t, proxy.Resume())
	s.appliedSince(t, time.Now())
	c.halt()
	require.Eventually(t, func() bool { return lag() < 2 }, 2*time.Minute, 200*time.Millisecond, "the lag returns to near 0")
	require.Contains(t, s.out.String(), "DynamoDB is unavailable; sync waits")
	s.stop(t)
	s.catchUp(t)
	s.requireConverged(t)
}

// The slot dropped, or invalidated (max_slot_wal_keep_size passed while
// sync was stopped), with source rows deleted meanwhile so that stale
// items exist: by default sync exits 2 naming the cause and the command
// that recovers; with --on-source-reset=resnapshot the table equals a
// fresh migrate, no stale item left.
func TestSyncSlotLostIsDetected(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		cause string
		lose  func(t *testing.T, srv *testenv.PGServer, sd *syncDesign)
	}{
		{"dropped", "does not exist", func(t *testing.T, srv *testenv.PGServer, sd *syncDesign) {
			testenv.ExecSQL(t, "postgres", sd.dsn, "SELECT pg_drop_replication_slot('"+slotName(sd.table)+"')")
		}},
		{"invalidated", "was invalidated", func(t *testing.T, srv *testenv.PGServer, sd *syncDesign) {
			// WAL past max_slot_wal_keep_size in a table sync does not
			// map, then checkpoints: the server removes WAL the stopped
			// slot still needs.
			testenv.ExecSQL(t, "postgres", sd.dsn, "CREATE TABLE junk (x text)")
			require.Eventually(t, func() bool {
				testenv.ExecSQL(t, "postgres", sd.dsn, "INSERT INTO junk SELECT repeat('x', 2000) FROM generate_series(1, 10000); SELECT pg_switch_wal(); CHECKPOINT;")
				rows := testenv.Rows(t, "postgres", sd.dsn, "SELECT wal_status FROM pg_replication_slots WHERE slot_name = '"+slotName(sd.table)+"'")
				return len(rows) == 1 && rows[0][0] == "lost"
			}, 2*time.Minute, 10*time.Millisecond, "the slot is invalidated")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := testenv.StartPostgres(t, "max_slot_wal_keep_size=32MB")
			sd := newSyncDesign(t, testenv.Driver{Name: "postgres", NewDB: srv.NewDB}, "portfolios", "testdata/sync/portfolios.yaml")
			sd.catchUp(t)
			// Rows deleted and added while sync is stopped: once the slot
			// is lost, only a reload finds them.
			testenv.ExecSQL(t, "postgres", sd.dsn, `DELETE FROM "databases" WHERE server_id = 'BobInternalServer';
				DELETE FROM servers WHERE id = 'BobInternalServer';
				INSERT INTO portfolios (id, name) VALUES (9, 'Added while stopped');`)
			c.lose(t, srv, sd)

			r := sd.cli(t, "sync", "--until-caught-up", "--progress", "none")
			require.Equal(t, exitUsage, r.Code, r.Output())
			require.Contains(t, r.Stderr, "the source was reset: the replication slot "+slotName(sd.table)+" "+c.cause)
			require.Contains(t, r.Stderr, "dynafold sync --on-source-reset=resnapshot")

			r = sd.cli(t, "sync", "--until-caught-up", "--progress", "none", "--on-source-reset", "resnapshot", "--log-level", "info")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stderr, "resnapshot complete")
			sd.requireConverged(t)
		})
	}
}

// A failover behind one address: sync reads a PostgreSQL primary through
// a proxy; the primary stops, its physical standby is promoted and the
// proxy switched to it, where the slot does not exist. With
// --on-source-reset=resnapshot sync loads again from a slot on the new
// primary, deletes what the promoted history lacks, and streams on.
// MariaDB: the proxy switched to another server (another server_id and
// GTID domain) holding another history of the database.
func TestSyncResnapshotsAfterFailover(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		primary := testenv.StartPostgres(t)
		var dsn string
		newDB := func(t testing.TB) string { dsn = primary.NewDB(t); return dsn }
		sd := newSyncDesign(t, testenv.Driver{Name: "postgres", NewDB: newDB}, "portfolios", "testdata/sync/portfolios.yaml")
		standby := primary.Standby(t)
		s, proxy := proxiedSync(t, sd, dsn, primary.Addr(), 5)

		at := time.Now()
		primary.Stop(t)
		t.Logf("primary stopped in %v", time.Since(at))
		standby.Promote(t)
		t.Logf("standby promoted after %v", time.Since(at))
		proxy.SetTarget(standby.Addr())
		promoted := strings.Replace(dsn, primary.Addr(), standby.Addr(), 1)
		c := startChurn(t, "postgres", promoted, 6)
		require.Eventually(t, func() bool { return strings.Contains(s.out.String(), "resnapshot complete") }, 2*time.Minute, 100*time.Millisecond,
			"sync loads again from the promoted standby; output:\n%s", lastLines(s.out.String(), 20))
		t.Logf("resnapshot complete after %v", time.Since(at))
		s.appliedSince(t, time.Now())
		c.halt()
		s.alive(t)
		s.stop(t)
		s.catchUp(t)
		s.requireConverged(t)
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		a := testenv.StartMariaDB(t)
		b := testenv.StartMariaDB(t, "--server-id=7", "--gtid-domain-id=3")
		var dsn string
		newDB := func(t testing.TB) string { dsn = a.NewDB(t); return dsn }
		sd := newSyncDesign(t, testenv.Driver{Name: "mysql", NewDB: newDB}, "portfolios", "testdata/sync/portfolios.yaml")
		// The other server holds the same database with another history.
		other := strings.Replace(dsn, a.Addr(), b.Addr(), 1)
		name := dsn[strings.LastIndexByte(dsn, '/')+1:]
		if i := strings.IndexByte(name, '?'); i >= 0 {
			name = name[:i]
		}
		testenv.ExecSQL(t, "mysql", b.DSN(""), "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci")
		testenv.LoadSQL(t, "mysql", other, clitest.RepoPath("testdata/portfolios/mysql.sql"))
		testenv.ExecSQL(t, "mysql", other, "DELETE FROM `databases` WHERE id = 'JeffSiteDB'; INSERT INTO portfolios (id, name) VALUES (5, 'Only in the other history');")

		s, proxy := proxiedSync(t, sd, dsn, a.Addr(), 7)

		proxy.SetTarget(b.Addr())
		require.Eventually(t, func() bool { return strings.Contains(s.out.String(), "resnapshot complete") }, 2*time.Minute, 100*time.Millisecond,
			"sync loads again from the other server; output:\n%s", lastLines(s.out.String(), 20))
		require.Contains(t, s.out.String(), "the source is another server")
		c := startChurn(t, "mysql", other, 8)
		s.appliedSince(t, time.Now())
		c.halt()
		s.alive(t)
		s.stop(t)
		s.catchUp(t)
		s.requireConverged(t)
	})
}

// proxiedSync runs the design's sync with --on-source-reset resnapshot
// through a proxy in front of the server at addr, and commits a churn to
// the source (dsn, direct) until sync has applied some of it.
func proxiedSync(t *testing.T, sd *syncDesign, dsn, addr string, seed uint64) (*serviceSync, *tcpproxy.Proxy) {
	t.Helper()
	proxy, err := tcpproxy.Start(addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	sd.setDSN(strings.Replace(dsn, addr, proxy.Addr(), 1))
	s := &serviceSync{syncDesign: sd, metrics: freeAddr(t)}
	s.run(t, "--on-source-reset", "resnapshot")
	c := startChurn(t, sd.driver, dsn, seed)
	s.appliedSince(t, time.Now())
	c.halt()
	return s, proxy
}

// An idle sync does not pile up WAL: while the mapped tables are idle and
// another table writes 200 MB of WAL, the slot's retained WAL stays under
// 64 MB, with and without --heartbeat-table (whose row it keeps writing).
func TestSyncIdleSlotFollowsTheServer(t *testing.T) {
	t.Parallel()
	srv := testenv.StartPostgres(t)
	d := testenv.Driver{Name: "postgres", NewDB: srv.NewDB}
	plain := startServiceSync(t, d)
	beating := startServiceSync(t, d, "--heartbeat-table", "public.dynafold_heartbeat", "--heartbeat-every", "1s")
	require.Eventually(t, func() bool {
		rows, err := tryRows("postgres", beating.dsn, "SELECT beat FROM dynafold_heartbeat")
		return err == nil && len(rows) == 1
	}, time.Minute, 200*time.Millisecond, "the heartbeat row is written")

	other := srv.NewDB(t)
	testenv.ExecSQL(t, "postgres", other, "CREATE TABLE junk (x text)")
	for written := 0; written < 200; written += 20 {
		// About 20 MB of WAL a statement.
		testenv.ExecSQL(t, "postgres", other, "INSERT INTO junk SELECT repeat(md5(g::text), 30) FROM generate_series(1, 20000) g")
	}
	retained := func(s *serviceSync) int64 {
		rows := testenv.Rows(t, "postgres", s.dsn, "SELECT (pg_current_wal_lsn() - restart_lsn)::bigint FROM pg_replication_slots WHERE slot_name = '"+slotName(s.table)+"'")
		require.Len(t, rows, 1)
		n, err := strconv.ParseInt(rows[0][0], 10, 64)
		require.NoError(t, err)
		return n
	}
	for _, s := range []*serviceSync{plain, beating} {
		require.Eventually(t, func() bool {
			// A checkpoint logs the running transactions, a point the
			// slot's restart_lsn can move to.
			testenv.ExecSQL(t, "postgres", other, "CHECKPOINT")
			return retained(s) < 64<<20
		}, 2*time.Minute, time.Second, "the slot of %s follows the server (retained %d bytes)", s.table, retained(s))
		m, err := scrape(s.metrics)
		require.NoError(t, err)
		v, ok := sample(m, "dynafold_sync_retained_wal_bytes")
		require.True(t, ok)
		t.Logf("%s: retained %d bytes now, %.0f at the last reading of the metric", s.table, retained(s), v)
		s.alive(t)
		s.stop(t)
	}
}
