package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
	"github.com/dynafold/dynafold/mapping"
)

// comparedElsewhere are the designs whose SQL meanings
// patterns_compare_test.go already checks after its own migrate; a second
// load of them here would only cost time.
var comparedElsewhere = map[string]bool{"portfolios": true, "chinook": true}

// After migrate, every other design in configs/ answers each of its access
// patterns as its SQL does, from both engines: every pattern has a SQL
// meaning, and every comparison agrees.
func TestPatternsConfigs(t *testing.T) {
	t.Parallel()
	configs, err := filepath.Glob(clitest.RepoPath("configs/*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, configs)
	for _, cfg := range configs {
		name := strings.TrimSuffix(filepath.Base(cfg), ".yaml")
		if comparedElsewhere[name] {
			continue
		}
		patterns := patternCount(t, cfg)
		for _, d := range testenv.Drivers() {
			t.Run(name+"/"+d.Name, func(t *testing.T) {
				t.Parallel()
				ds := newDesign(t, d, name)
				ds.migrate(t, compareArgs[name]...)
				args := append([]string{"patterns", "--compare-source"}, compareArgs[name]...)
				r := ds.run(t, ds.dir, args...)
				require.Equal(t, 0, r.Code, r.Output())
				require.Contains(t, r.Stdout, comparisons(patterns)+", 0 mismatched", r.Stdout)
			})
		}
	}
}

// patternCount is the number of access patterns in the mapping at path,
// every one of which must have a SQL meaning (alleycat's too, whose
// answers hold the parts of split readings: the comparison joins them to
// their heads).
func patternCount(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	m, err := mapping.Parse(data)
	require.NoError(t, err, path)
	for _, p := range m.Patterns {
		require.NotNil(t, p.SQL, "%s: pattern %q has no sql:", path, p.Name)
	}
	require.NotEmpty(t, m.Patterns, "%s has no access pattern", path)
	return len(m.Patterns)
}

// comparisons is the summary's count, as patterns --compare-source writes it.
func comparisons(n int) string {
	if n == 1 {
		return "1 comparison"
	}
	return fmt.Sprintf("%d comparisons", n)
}

// compareArgs are the flags a design needs to load the data its patterns
// read: photos' pattern reads tenant 7.
var compareArgs = map[string][]string{
	"photos": {"--var", "tenant=7"},
}

// plan checks access patterns against the key rules and their SQL
// meanings' order: a pattern whose SQL has ORDER BY but is not compared in
// order is a warning naming the pattern, with its fix.
func TestPlanPatternOrder(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			dsn := d.NewDB(t)
			testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/portfolios/"+d.Name+".sql"))
			cfg := mappingWith(t, t.TempDir(), "portfolios", `access_patterns:
  - name: servers of portfolio 1
    query: {pk: "1", sk_begins_with: "SERVER#"}
    sql: SELECT id, portfolio_id FROM servers WHERE portfolio_id = 1 ORDER BY lower(id)
    compare: {attributes: {ServerID: id, PortfolioID: portfolio_id}}
`)
			r := clitest.Run(t, "", nil, "plan", "--config", cfg, "--source-dsn", dsn, "--no-target")
			require.Equal(t, 0, r.Code, r.Output())
			require.Contains(t, r.Stdout, "pattern.order_not_compared", r.Stdout)
			require.Contains(t, r.Stdout, `pattern "servers of portfolio 1"'s SQL has ORDER BY but compare: is not ordered`, r.Stdout)
			require.Contains(t, r.Stdout, "add ordered: true to compare:", r.Stdout)
		})
	}
}
