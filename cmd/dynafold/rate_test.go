package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/ddbnoop"
	"github.com/dynafold/dynafold/internal/testenv"
)

// --max-wcu caps the write units consumed per second: measured by the
// endpoint itself, second by second, the rate stays within 10% of the cap.
func TestMaxWCUHoldsTheRate(t *testing.T) {
	// Serial: a run sharing the two cores with other tests may fall short
	// of the cap, which is not what this test is about.
	// One-unit items, ten per portfolio: about 8 s at the cap (15 s in the
	// full tier).
	const capWCU = 3000
	portfolios := testenv.Size(2400, 4500)
	seconds := testenv.Size(6, 12) // full seconds at the cap, at least
	d := testenv.Drivers()[0]
	dsn := d.NewDB(t)
	loadScale(t, d.Name, dsn, portfolios)
	url, stop, err := ddbnoop.Start(ddbnoop.Options{})
	require.NoError(t, err)
	defer stop()
	flags := []string{"--config", clitest.RepoPath("configs/portfolios.yaml"), "--source-dsn", dsn, "--endpoint", url, "--table", "capped"}
	r := clitest.Run(t, "", nil, append([]string{"table", "create"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())
	r = clitest.Run(t, "", nil, append([]string{"migrate", "--progress", "none", "--max-wcu", "3000"}, flags...)...)
	require.Equal(t, 0, r.Code, r.Output())

	resp, err := http.Get(url + "/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st ddbnoop.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	require.EqualValues(t, 10*portfolios, st.WriteUnits)
	require.GreaterOrEqual(t, len(st.Series), seconds, "the run spans at least %d seconds at the cap", seconds)
	// The first and last seconds are partial; every full second between them
	// is held to the cap.
	inner := st.Series[1 : len(st.Series)-1]
	var total int64
	for _, s := range inner {
		require.LessOrEqual(t, float64(s.WriteUnits), 1.10*capWCU, "second %d: %d units", s.Unix, s.WriteUnits)
		total += s.WriteUnits
	}
	avg := float64(total) / float64(len(inner))
	require.InDelta(t, capWCU, avg, 0.10*capWCU, "average %.0f units per second", avg)
	t.Logf("average %.0f write units per second over %d full seconds (cap %d)", avg, len(inner), capWCU)
}
