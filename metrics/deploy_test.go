package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// exposed is every series name a sync's registry serves.
func exposed(t *testing.T) map[string]bool {
	reg := NewRegistry()
	NewSync(reg, "t", SyncSources{Lag: func() float64 { return 0 }, Behind: func() float64 { return 0 },
		Throttled: func() float64 { return 0 }, RequestRetries: func() float64 { return 0 }})
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]bool{}
	for _, f := range families {
		out[f.GetName()] = true
	}
	return out
}

var seriesName = regexp.MustCompile(`\b(?:dynafold|process|go)_[a-z_]+\b`)

// requireSeries requires every series an expression names to exist.
func requireSeries(t *testing.T, names map[string]bool, where, expr string) {
	t.Helper()
	found := seriesName.FindAllString(expr, -1)
	require.NotEmpty(t, found, "%s: %s names no series", where, expr)
	for _, n := range found {
		require.True(t, names[n], "%s: %s names %s, which sync does not serve", where, expr, n)
	}
}

// The alert rules in deploy/ watch series sync serves, with the
// thresholds docs/sync-service.md gives: lag over 60 s for 5 minutes, the source
// away for 2, retained WAL over 1 GiB.
func TestAlertRulesUseServedSeries(t *testing.T) {
	data, err := os.ReadFile("../deploy/prometheus/dynafold-alerts.yaml")
	require.NoError(t, err)
	var doc struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
				For   string `yaml:"for"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(data, &doc))
	names := exposed(t)
	rules := map[string][2]string{}
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			requireSeries(t, names, r.Alert, r.Expr)
			rules[r.Alert] = [2]string{r.Expr, r.For}
		}
	}
	require.Equal(t, [2]string{"dynafold_sync_lag_seconds > 60", "5m"}, rules["DynafoldSyncLagging"])
	require.Equal(t, [2]string{"dynafold_source_connected == 0", "2m"}, rules["DynafoldSourceDisconnected"])
	require.Equal(t, [2]string{"dynafold_sync_retained_wal_bytes > 1073741824", "5m"}, rules["DynafoldRetainedWALHigh"])
}

// Every panel of the Grafana dashboard in deploy/ queries series sync
// serves.
func TestDashboardUsesServedSeries(t *testing.T) {
	data, err := os.ReadFile("../deploy/grafana/dynafold-sync.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(data, &dash))
	require.NotEmpty(t, dash.Panels)
	names := exposed(t)
	for _, p := range dash.Panels {
		require.NotEmpty(t, p.Targets, p.Title)
		for _, q := range p.Targets {
			requireSeries(t, names, p.Title, q.Expr)
		}
	}
}
