package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// reversibleDesigns is what plan --reversible finds in each design of
// configs/, the same from both databases (docs/failback.md, "What
// reverses"): the entity.column (or entity alone) of each failure.
var reversibleDesigns = map[string][]string{
	"alleycat": {"best"},
	"chinook":  {"track.media_type_id"},
}

// reversibleFixes are the small mapping changes docs/failback.md gives
// for the designs that do not reverse; each makes its design reversible.
var reversibleFixes = map[string]func(string) string{
	// best is computed by a query: the mapping fail-back runs with leaves
	// it out, and the access patterns (one reads best).
	"alleycat": func(m string) string { return m[:strings.Index(m, "\n  best:\n")+1] },
	// track keeps media_type_id raw, not only the joined media type's name.
	"chinook": func(m string) string {
		return strings.Replace(m, "      MediaType: media_type.name\n", "      MediaType: media_type.name\n      MediaTypeID: media_type_id\n", 1)
	},
}

// reversibility runs plan --reversible on a design loaded into a fresh
// database and returns its exit code and failures.
// fix, when set, rewrites the mapping first.
func reversibility(t *testing.T, d testenv.Driver, name string, fix func(string) string, extra ...string) (int, clitest.Result) {
	t.Helper()
	dsn := d.NewDB(t)
	testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/"+name+"/"+d.Name+".sql"))
	config := clitest.RepoPath("configs/" + name + ".yaml")
	if fix != nil {
		b, err := os.ReadFile(config)
		require.NoError(t, err)
		config = filepath.Join(t.TempDir(), name+".yaml")
		require.NoError(t, os.WriteFile(config, []byte(fix(string(b))), 0o600))
	}
	args := append([]string{"plan", "--config", config, "--source-dsn", dsn, "--no-target"}, extra...)
	r := clitest.Run(t, "", nil, args...)
	return r.Code, r
}

// failures lists the entity.column of each thing that cannot reverse in
// a JSON plan report.
func failures(t *testing.T, stdout string) (bool, []string) {
	t.Helper()
	var rep struct {
		Reversible *struct {
			Reversible bool `json:"reversible"`
			Entities   []struct {
				Entity   string            `json:"entity"`
				Problems []json.RawMessage `json:"problems"`
				Columns  []struct {
					Column string `json:"column"`
					Status string `json:"status"`
				} `json:"columns"`
				Nested []struct {
					Attribute string `json:"attribute"`
					Columns   []struct {
						Column string `json:"column"`
						Status string `json:"status"`
					} `json:"columns"`
				} `json:"nested"`
			} `json:"entities"`
		} `json:"reversible"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	require.NotNil(t, rep.Reversible, "no reversibility section")
	var out []string
	for _, e := range rep.Reversible.Entities {
		if len(e.Problems) > 0 {
			out = append(out, e.Entity)
		}
		for _, c := range e.Columns {
			if c.Status == "irreversible" {
				out = append(out, e.Entity+"."+c.Column)
			}
		}
		for _, n := range e.Nested {
			for _, c := range n.Columns {
				if c.Status == "irreversible" {
					out = append(out, fmt.Sprintf("%s.%s.%s", e.Entity, n.Attribute, c.Column))
				}
			}
		}
	}
	sort.Strings(out)
	return rep.Reversible.Reversible, out
}

// Every design of configs/, from both databases: plan --reversible says
// what cannot reverse, exits 2 when something cannot, and 0 otherwise.
func TestPlanReversibleDesigns(t *testing.T) {
	t.Parallel()
	names := []string{"alleycat", "cart", "chinook", "devices", "duda", "messages", "photos", "portfolios", "products", "telemetryhub", "votes"}
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			for _, name := range names {
				t.Run(name, func(t *testing.T) {
					code, r := reversibility(t, d, name, nil, "--reversible", "--output", "json", "--var", "tenant=1")
					ok, got := failures(t, r.Stdout)
					t.Logf("%s %s: exit %d, reversible %v, failures %q", d.Name, name, code, ok, got)
					want := reversibleDesigns[name]
					require.Equal(t, want, got)
					require.Equal(t, len(want) == 0, ok)
					if len(want) == 0 {
						require.Equal(t, 0, code, r.Output())
						return
					}
					require.Equal(t, 2, code, r.Output())
					code, r = reversibility(t, d, name, reversibleFixes[name], "--reversible", "--output", "json")
					require.Equal(t, 0, code, r.Output())
					ok, got = failures(t, r.Stdout)
					require.True(t, ok)
					require.Empty(t, got)
				})
			}
		})
	}
}

// Without --reversible plan neither reports nor judges reversibility;
// with it, the text names the entity and column that cannot reverse.
func TestPlanReversibleText(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			code, r := reversibility(t, d, "alleycat", nil)
			require.Equal(t, 0, code, r.Output())
			require.NotContains(t, r.Stdout, "REVERSIBILITY")

			code, r = reversibility(t, d, "alleycat", nil, "--reversible")
			require.Equal(t, 2, code, r.Output())
			require.Contains(t, r.Stdout, "reverse.irreversible")
			require.Contains(t, r.Stdout, "entity best cannot be rebuilt from the items: its items are computed by a query")
			require.Contains(t, r.Stdout, "REVERSIBILITY (fail-back)")
			require.Contains(t, r.Stdout, "the mapping has errors")
			require.Contains(t, r.Stdout, "entity best: NOT reversible")
			require.Contains(t, r.Stdout, "fix: map the table it reads with from: instead")
		})
	}
}
