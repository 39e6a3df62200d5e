package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/faultproxy"
	"github.com/dynafold/dynafold/internal/testenv"
)

// Every fault a real DynamoDB table and the network in front of it produce,
// all at once, on a 20,000-item migration (10,000 from MariaDB; 100,000 and
// 20,000 in the full tier), through a race-built CLI: partial
// batches (UnprocessedItems), both throttling exceptions, 500 and 503,
// connections reset before and after the write was applied, and added
// latency. The run completes (exit 0) with exactly the expected items, and
// its summary counts the retries and the throttling.
//
// The table is created directly against dynalite; only migrate goes through
// the proxy, whose seed is fixed (the assignment of faults to requests still
// depends on the writers' arrival order, the rates do not).
func TestMigrateThroughInjectedFaultsLosesNothing(t *testing.T) {
	t.Parallel()
	clitest.RaceBuilt(t)
	for _, d := range testenv.Drivers() {
		// Ten rows and items each. The faults are on the write side, so
		// MariaDB's run is the smaller one.
		portfolios := testenv.Size(2_000, 10_000)
		if d.Name == "mysql" {
			portfolios = testenv.Size(1_000, 2_000)
		}
		t.Run(d.Name, func(t *testing.T) {
			tg := newScaleTarget(t, d, portfolios)
			proxy, err := faultproxy.New(testenv.DynamoEndpoint(t), faultproxy.Config{
				Partial:    0.20,
				Throttle:   0.05, // ProvisionedThroughputExceededException
				Throttling: 0.05, // ThrottlingException
				Error5xx:   0.05, // 500 and 503, alternately
				Reset:      0.01, // reset before the write reaches dynalite
				ResetAfter: 0.01, // reset after dynalite applied the write
				Latency:    20 * time.Millisecond,
				Seed:       8,
			})
			require.NoError(t, err)
			url, stop, err := proxy.Start()
			require.NoError(t, err)
			defer stop()

			dir := t.TempDir()
			report := filepath.Join(dir, "report.json")
			started := time.Now()
			r := clitest.Run(t, dir, nil, append([]string{"migrate", "--progress", "none", "--report", report}, tg.with(url)...)...)
			require.Equal(t, 0, r.Code, r.Output())
			t.Logf("migrated %d items through the fault proxy in %v", 10*portfolios, time.Since(started).Round(time.Millisecond))

			st := proxy.Stats()
			t.Logf("proxy: %+v", st)
			require.Positive(t, st.Partial, "partial batches were injected")
			require.Positive(t, st.Throttle+st.Throttling, "throttling was injected")
			require.Positive(t, st.Error500, "500s were injected")
			require.Positive(t, st.Error503, "503s were injected")
			require.Positive(t, st.Reset+st.ResetAfter, "resets were injected")
			// A loaded machine can make dynalite miss the proxy's deadline now
			// and then; the proxy answers 502, one more fault to retry.
			require.Less(t, st.BackendErrors, st.Forwarded/100, "dynalite answered nearly every forwarded request")

			rep := readReport(t, report)
			require.Equal(t, 0, rep.ExitCode)
			tot := rep.Summary.Total
			t.Logf("summary: %+v; writes: %+v", tot, rep.Summary.Sink)
			require.EqualValues(t, 10*portfolios, tot.RowsRead)
			require.EqualValues(t, 10*portfolios, tot.ItemsWritten, "every item acknowledged exactly once")
			require.Zero(t, tot.Rejected+tot.Skipped)
			require.Positive(t, tot.Retried, "the summary counts retried requests")
			require.Positive(t, tot.Throttled, "the summary counts throttled requests")
			require.Positive(t, rep.Summary.Sink.UnprocessedItems, "unprocessed items were resent")
			w := rep.Summary.Sink
			require.Equal(t, st.Eligible, w.Requests, "every request the proxy saw is counted")
			require.EqualValues(t, 10*portfolios, w.Items)
			require.Equal(t, st.PartialHeldBack, w.UnprocessedItems, "every held-back item was counted and sent again")
			require.GreaterOrEqual(t, w.Throttled, st.Throttle+st.Throttling+st.Partial,
				"every throttling exception and partial batch was seen as throttling")
			require.GreaterOrEqual(t, w.Retried, st.Throttle+st.Throttling+st.Error500+st.Error503+st.Reset+st.ResetAfter+st.BackendErrors,
				"every failed request was retried")

			// An independent scan, straight from dynalite.
			requireScaleTable(t, tg.client, tg.table, portfolios)

			// And dynafold's own proof: verify against the table, without faults.
			r = tg.run(t, dir, "verify")
			require.Equal(t, 0, r.Code, r.Output())
		})
	}
}
