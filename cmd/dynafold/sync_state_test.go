package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/ddbnoop"
	"github.com/dynafold/dynafold/internal/faultproxy"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/sink"
)

// Sync's state off the machine (--state dynamodb://TABLE): it moves to
// another host with no reload; two syncs share one state, one active and
// one standby; a standby takes over when the active one dies; an active
// one paused past its lease writes nothing when it resumes.

// sharedState creates a state table with table create --state and
// returns the --state flags for it.
func sharedState(t *testing.T, sd *syncDesign) []string {
	t.Helper()
	table := testenv.NewTableName(t)
	testenv.DeleteTableOnCleanup(t, sd.client, table)
	r := clitest.Run(t, "", nil, "table", "create", "--state", "dynamodb://"+table, "--endpoint", testenv.DynamoEndpoint(t))
	require.Equal(t, 0, r.Code, r.Output())
	require.Contains(t, r.Stdout, "created the sync state table "+table)
	return []string{"--state", "dynamodb://" + table}
}

// A sync stopped on one host and started on another with only the same
// --state, its local directory gone, resumes where it stopped: no reload.
func TestSyncStateMovesMachines(t *testing.T) {
	t.Parallel()
	sd := newSyncDesign(t, testenv.Drivers()[0], "portfolios", "testdata/sync/portfolios.yaml")
	state := sharedState(t, sd)
	rng := rand.New(rand.NewPCG(27, 4))
	w := newWorkload(t, sd.driver, sd.dsn, sd.name)
	runWorkload(t, sd.driver, sd.dsn, w, rng, 20)
	cmd, out := sd.start(t, append(state, "--lease-duration", "3s")...)
	runWorkload(t, sd.driver, sd.dsn, w, rng, 60)
	waitFor(t, out, `"event":"sync_status"`)
	interrupt(t, cmd, out)
	require.NoError(t, os.RemoveAll(sd.dir))
	_, err := os.Stat(filepath.Join(sd.dir, ".dynafold"))
	require.ErrorIs(t, err, os.ErrNotExist)

	runWorkload(t, sd.driver, sd.dsn, w, rng, 30)
	other := t.TempDir()
	report := filepath.Join(other, "report.json")
	// The new host names the state by environment (DYNAFOLD_STATE).
	r := clitest.Run(t, other, []string{"DYNAFOLD_STATE=" + state[1]}, sd.args("sync", "--until-caught-up", "--progress", "none", "--report", report)...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Contains(t, r.Stdout, "caught up with")
	var rep struct {
		Result struct {
			Load    json.RawMessage `json:"load"`
			Phase   string          `json:"phase"`
			ThisRun struct {
				LoadedItems int64 `json:"loaded_items"`
				Changes     int64 `json:"changes"`
			} `json:"this_run"`
		} `json:"result"`
	}
	b, err := os.ReadFile(report)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Empty(t, rep.Result.Load, "no initial load on the new host")
	require.Zero(t, rep.Result.ThisRun.LoadedItems)
	require.Positive(t, rep.Result.ThisRun.Changes, "the changes made while it was stopped are applied")
	_, err = os.Stat(filepath.Join(other, ".dynafold"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is kept on the machine")
	require.NoError(t, os.MkdirAll(sd.dir, 0o755))
	sd.requireConverged(t)

	// sync cleanup --state removes the sync's items from the state table;
	// a second finds nothing.
	r = sd.cli(t, append([]string{"sync", "cleanup"}, state...)...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Contains(t, r.Stdout, "items of sync "+sd.table+" in state table")
	r = sd.cli(t, append([]string{"sync", "cleanup"}, state...)...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Contains(t, r.Stdout, "nothing to clean up")
}

// leasedSync is one of two syncs of one shared state.
type leasedSync struct {
	cmd     *exec.Cmd
	out     *syncBuffer
	metrics string
	watch   *watcher
}

func startLeased(t *testing.T, sd *syncDesign, dir string, extra ...string) *leasedSync {
	t.Helper()
	s := &leasedSync{metrics: freeAddr(t)}
	// extra comes last so that it overrides the common flags.
	args := append(sd.args("sync", "--progress", "json", "--metrics-addr", s.metrics, "--log-level", "info", "--status-every", "1s"), extra...)
	s.cmd = clitest.Command(t.Context(), t, dir, nil, args...)
	s.out = &syncBuffer{}
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	require.NoError(t, s.cmd.Start())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sync in %s said:\n%s", dir, lastLines(s.out.String(), 30))
		}
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	})
	s.watch = watch(t, s.metrics)
	return s
}

// standby waits until the sync says it is standby, and requires /readyz
// not ready.
func (s *leasedSync) standby(t *testing.T, after string) {
	t.Helper()
	waitFor(t, s.out, after)
	ok, err := ready(s.metrics)
	require.NoError(t, err)
	require.False(t, ok, "a standby is not ready")
}

// appliedAfter waits until the watcher saw changes applied after at and
// returns when.
func (s *leasedSync) appliedAfter(t *testing.T, at time.Time, within time.Duration) time.Time {
	t.Helper()
	var when time.Time
	require.Eventually(t, func() bool {
		for _, o := range s.watch.since(at) {
			if o.ready && o.applied > 0 {
				when = o.at
				return true
			}
		}
		return false
	}, within, 50*time.Millisecond, "changes applied after %s; output:\n%s", at.Format(time.TimeOnly), lastLines(s.out.String(), 20))
	return when
}

// Two syncs share one state under a churn workload; the active one is
// killed (SIGKILL); the standby, with the default lease duration and
// fence, takes over: it turns ready and applies changes. The time from
// the kill to the first change it applies is logged (the goal is 15 s).
func TestSyncStateFailover(t *testing.T) {
	t.Parallel()
	for _, d := range syncDrivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			sd := newSyncDesign(t, d, "portfolios", "testdata/sync/portfolios.yaml")
			state := sharedState(t, sd)
			a := startLeased(t, sd, sd.dir, state...)
			a.watch.waitReady(t, time.Time{}, 2*time.Minute)
			b := startLeased(t, sd, t.TempDir(), state...)
			b.standby(t, "standby: another sync holds the state's lease")
			c := startChurn(t, d.Name, sd.dsn, 27)
			a.appliedAfter(t, time.Now(), time.Minute)
			ok, err := ready(b.metrics)
			require.NoError(t, err)
			require.False(t, ok, "the standby stays not ready while the active sync applies changes")

			killed := time.Now()
			require.NoError(t, a.cmd.Process.Kill())
			_ = a.cmd.Wait()
			first := b.appliedAfter(t, killed, time.Minute)
			t.Logf("failover (%s): %.1f s from SIGKILL of the active sync to the first change the standby applied (lease 10 s, fence 5 s)",
				d.Name, first.Sub(killed).Seconds())
			require.Contains(t, b.out.String(), "took the state's lease")

			c.halt()
			require.NoError(t, b.cmd.Process.Signal(syscall.SIGTERM))
			_ = b.cmd.Wait()
			r := clitest.Run(t, t.TempDir(), nil, sd.args(append([]string{"sync", "--until-caught-up", "--progress", "none"}, state...)...)...)
			require.Equal(t, 0, r.Code, r.Output())
			sd.requireConverged(t)
		})
	}
}

// The active sync is paused (SIGSTOP) until its lease expired and the
// standby holds it, then resumed: it sends no write to DynamoDB after it
// resumes (counted through a proxy in front of it) and goes back to
// standby; the standby applies changes, and the table is exact.
func TestSyncStateZombieWritesNothing(t *testing.T) {
	t.Parallel()
	sd := newSyncDesign(t, testenv.Drivers()[0], "portfolios", "testdata/sync/portfolios.yaml")
	state := append(sharedState(t, sd), "--lease-duration", "3s", "--fence", "2s")
	proxy, err := faultproxy.New(testenv.DynamoEndpoint(t), faultproxy.Config{Ops: []string{"BatchWriteItem", "PutItem", "UpdateItem", "DeleteItem"}})
	require.NoError(t, err)
	url, stop, err := proxy.Start()
	require.NoError(t, err)
	t.Cleanup(stop)

	a := startLeased(t, sd, sd.dir, append(state, "--endpoint", url)...)
	a.watch.waitReady(t, time.Time{}, 2*time.Minute)
	b := startLeased(t, sd, t.TempDir(), state...)
	b.standby(t, "standby: another sync holds the state's lease")
	c := startChurn(t, "postgres", sd.dsn, 28)
	a.appliedAfter(t, time.Now(), time.Minute)

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	waitFor(t, b.out, "took the state's lease")
	writes := proxy.Stats().Eligible
	require.Positive(t, writes, "the active sync wrote through the proxy before it was paused")
	resumed, said := time.Now(), len(a.out.String())
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	waitFor(t, a.out, "lost the state's lease")
	b.appliedAfter(t, resumed, time.Minute)
	a.standby(t, "lost the state's lease")
	require.Equal(t, writes, proxy.Stats().Eligible, "the paused sync sent writes after it resumed:\n%s", lastLines(a.out.String(), 20))
	require.NotContains(t, a.out.String()[said:], "took the state's lease", "the resumed sync stays standby while the other holds the lease")

	c.halt()
	for _, s := range []*leasedSync{a, b} {
		require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
		_ = s.cmd.Wait()
	}
	r := clitest.Run(t, t.TempDir(), nil, sd.args(append([]string{"sync", "--until-caught-up", "--progress", "none"}, state...)...)...)
	require.Equal(t, 0, r.Code, r.Output())
	sd.requireConverged(t)
}

// --state-endpoint puts the state table at another endpoint than the
// target's. The target here is the no-op endpoint, which answers no
// GetItem, PutItem or UpdateItem and so cannot hold a state: with the
// state endpoint (by environment, DYNAFOLD_STATE_ENDPOINT) at dynalite,
// sync loads into the no-op endpoint and its state lands in dynalite,
// and the no-op endpoint never sees the state table. Without it, the same
// command takes the target's endpoint for the state and fails there.
func TestSyncStateEndpoint(t *testing.T) {
	t.Parallel()
	d := testenv.Drivers()[0]
	dsn := d.NewDB(t)
	testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/portfolios/"+d.Name+".sql"))
	noop, stop, err := ddbnoop.Start(ddbnoop.Options{})
	require.NoError(t, err)
	t.Cleanup(stop)
	target := testenv.NewTableName(t)
	stateTable := testenv.NewTableName(t)
	dynalite := testenv.DynamoClient(t)
	testenv.DeleteTableOnCleanup(t, dynalite, stateTable)
	dir := t.TempDir()
	flags := []string{"--config", clitest.RepoPath("testdata/sync/portfolios.yaml"), "--source-dsn", dsn, "--endpoint", noop, "--table", target,
		"--state", "dynamodb://" + stateTable}
	onDynalite := []string{"DYNAFOLD_STATE_ENDPOINT=" + testenv.DynamoEndpoint(t)}
	t.Cleanup(func() { clitest.Run(t, dir, onDynalite, append([]string{"sync", "cleanup"}, flags...)...) })
	r := clitest.Run(t, dir, nil, append([]string{"table", "create"}, flags[:8]...)...)
	require.Equal(t, 0, r.Code, r.Output())

	r = clitest.Run(t, dir, onDynalite, append([]string{"sync", "--until-caught-up", "--progress", "none"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	require.Contains(t, r.Stdout, "caught up with")
	require.Contains(t, r.Stderr, "created the sync state table "+stateTable)
	stats := noopStats(t, noop)
	require.Positive(t, stats.Items, "the load was written to the target")
	out, err := dynalite.GetItem(t.Context(), &dynamodb.GetItemInput{TableName: &stateTable,
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: target + "#state"}}})
	require.NoError(t, err)
	require.NotEmpty(t, out.Item, "the state document is in the state table at the state endpoint")
	require.NotContains(t, noopTables(t, noop), stateTable, "the target's endpoint has no state table")
	_, err = os.Stat(filepath.Join(dir, ".dynafold"))
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is kept on the machine")

	// Without --state-endpoint the state goes where the target is.
	r = clitest.Run(t, dir, nil, append([]string{"sync", "--until-caught-up", "--progress", "none"}, flags...)...)
	require.NotEqual(t, 0, r.Code, r.Output())
	require.Contains(t, r.Stderr, "UnknownOperation")
	require.Contains(t, noopTables(t, noop), stateTable)

	// --state-endpoint without a state table to put there is refused.
	r = clitest.Run(t, dir, onDynalite, append([]string{"sync", "--until-caught-up", "--progress", "none"}, flags[:8]...)...)
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "--state-endpoint")
}

func noopStats(t *testing.T, url string) ddbnoop.Stats {
	t.Helper()
	resp, err := http.Get(url + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st ddbnoop.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

// noopTables lists the tables of the no-op endpoint.
func noopTables(t *testing.T, url string) []string {
	t.Helper()
	c, err := sink.NewClient(t.Context(), sink.ClientOptions{Endpoint: url})
	require.NoError(t, err)
	out, err := c.ListTables(t.Context(), &dynamodb.ListTablesInput{})
	require.NoError(t, err)
	return out.TableNames
}

// The row index is read into memory when sync takes the state: with the
// default cache the whole index fits, and no lookup asks the state table.
// With a cache smaller than the index, what was not listed is asked for
// once: one portfolio renamed five times, a transaction each, re-derives
// the same collection in every round, and only the first round asks the
// state table for its rows' keys. With --index-cache 0 nothing is kept.
func TestSyncStateCachesTheRowIndex(t *testing.T) {
	t.Parallel()
	sd := newSyncDesign(t, testenv.Drivers()[0], "portfolios", "testdata/sync/portfolios.yaml")
	state := sharedState(t, sd)
	// More portfolios, so that the index outgrows the small cache below.
	for id := 100; id < 120; id++ {
		testenv.ExecSQL(t, sd.driver, sd.dsn, fmt.Sprintf("INSERT INTO portfolios (id, name) VALUES (%d, 'P%d')", id, id))
	}
	r := sd.cli(t, append([]string{"sync", "--until-caught-up", "--progress", "none"}, state...)...)
	require.Equal(t, 0, r.Code, r.Output())
	renames := func(from int) {
		for i := from; i < from+5; i++ {
			testenv.ExecSQL(t, sd.driver, sd.dsn, fmt.Sprintf("UPDATE portfolios SET name = 'renamed %d' WHERE id = (SELECT min(id) FROM portfolios)", i))
		}
	}
	type cacheReport struct {
		Result struct {
			ThisRun struct {
				RowsDerived int64 `json:"rows_rederived"`
				Changes     int64 `json:"changes"`
			} `json:"this_run"`
			Cache *struct {
				Hits   int64 `json:"hits"`
				Misses int64 `json:"misses"`
				Warmed struct {
					Rows  int64 `json:"rows"`
					Whole bool  `json:"whole_index"`
				} `json:"warmed"`
			} `json:"row_index_cache"`
		} `json:"result"`
	}
	catchUp := func(extra ...string) cacheReport {
		report := filepath.Join(t.TempDir(), "report.json")
		args := append([]string{"sync", "--until-caught-up", "--progress", "none", "--round-changes", "1", "--report", report}, state...)
		r := sd.cli(t, append(args, extra...)...)
		require.Equal(t, 0, r.Code, r.Output())
		var rep cacheReport
		b, err := os.ReadFile(report)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &rep))
		require.Equal(t, int64(5), rep.Result.ThisRun.Changes)
		return rep
	}

	renames(1)
	rep := catchUp()
	c, derived := rep.Result.Cache, rep.Result.ThisRun.RowsDerived
	require.NotNil(t, c)
	t.Logf("whole index: %d rows listed; rows re-derived %d, row-index lookups from memory %d, from the state table %d", c.Warmed.Rows, derived, c.Hits, c.Misses)
	require.True(t, c.Warmed.Whole)
	require.Greater(t, c.Warmed.Rows, int64(12), "the index is larger than the small cache below")
	require.Positive(t, derived)
	require.Equal(t, derived, c.Hits)
	require.Zero(t, c.Misses)
	sd.requireConverged(t)

	renames(6)
	rep = catchUp("--index-cache", "12")
	c, derived = rep.Result.Cache, rep.Result.ThisRun.RowsDerived
	t.Logf("cache of 12 rows: %d rows listed; rows re-derived %d, row-index lookups from memory %d, from the state table %d", c.Warmed.Rows, derived, c.Hits, c.Misses)
	require.False(t, c.Warmed.Whole)
	require.LessOrEqual(t, c.Warmed.Rows, int64(12))
	require.Equal(t, derived, c.Hits+c.Misses, "every re-derived row's keys are looked up once")
	require.LessOrEqual(t, c.Misses, derived/5, "only the first of the five rounds asks the state table")
	sd.requireConverged(t)

	renames(11)
	rep = catchUp("--index-cache", "0")
	require.Nil(t, rep.Result.Cache)
	sd.requireConverged(t)
}
