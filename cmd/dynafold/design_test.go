package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/ddbjson"
	"github.com/dynafold/dynafold/internal/clitest"
	"github.com/dynafold/dynafold/internal/testenv"
)

// The sample items of design workbench are exactly items migrate writes
// for those rows: the first --sample rows of each entity and the rows of
// the collections sampled (the access patterns', or --sample-keys'), on
// both engines.
func TestDesignCmdSamplesAreWhatMigrateWrites(t *testing.T) {
	t.Parallel()
	for _, d := range testenv.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
			r := tg.run(t, "", "table", "create")
			require.Equal(t, 0, r.Code, r.Output())
			r = tg.run(t, "", "migrate", "--progress", "none")
			require.Equal(t, 0, r.Code, r.Output())
			written := testenv.ScanItems(t, tg.client, tg.table)

			samples := func(args ...string) []string {
				r := tg.run(t, "", append([]string{"design", "workbench"}, args...)...)
				require.Equal(t, 0, r.Code, r.Output())
				var model struct {
					DataModel []struct {
						TableData []json.RawMessage
					}
				}
				require.NoError(t, json.Unmarshal([]byte(r.Stdout), &model), r.Stdout)
				var out []string
				for _, raw := range model.DataModel[0].TableData {
					item, err := ddbjson.Decode(raw)
					require.NoError(t, err, string(raw))
					out = append(out, testenv.ItemJSON(t, item))
				}
				return out
			}
			// Portfolio 1's collection (every access pattern's) and the
			// first 3 rows of each entity, portfolio 2's: every item.
			require.ElementsMatch(t, written, samples("--sample", "3"))

			// One first row of each entity (portfolio 1, and portfolio 2's
			// server and database, first by key) and one row per entity of
			// portfolio 1's collection, named instead of the patterns'.
			got := samples("--sample", "1", "--sample-keys", "1")
			require.Subset(t, written, got)
			var keys []string
			for _, s := range got {
				var k struct{ PK, SK string }
				require.NoError(t, json.Unmarshal([]byte(s), &k))
				keys = append(keys, k.PK+" / "+k.SK)
			}
			require.Equal(t, []string{"1 / DATABASE#jeffinternaldb", "1 / PORTFOLIO", "1 / SERVER#jeffinternalserver", "2 / DATABASE#bobinternaldb", "2 / SERVER#bobinternalserver"}, keys)
		})
	}
}

// A mapping error exits 2, as plan; an unreachable source is the usual
// one-line "cannot reach"; --sample and --import-from are checked.
func TestDesignCmdErrors(t *testing.T) {
	t.Parallel()
	config := clitest.RepoPath("configs/portfolios.yaml")
	broken := clitest.RepoPath("testdata/mappings/broken/04-missing-pk-template.yaml")
	for _, kind := range []string{"workbench", "html"} {
		r := clitest.Run(t, "", nil, "design", kind, "--config", broken, "--no-source")
		require.Equal(t, exitUsage, r.Code, r.Output())
		require.Contains(t, r.Stderr, "04-missing-pk-template.yaml")
	}
	r := clitest.Run(t, "", nil, "design", "workbench", "--config", config, "--no-source", "--sample", "0")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "--sample must be at least 1 row per entity, not 0")
	r = clitest.Run(t, "", nil, "design", "terraform", "--config", clitest.RepoPath("configs/duda.yaml"), "--no-source", "--import-from", "s3://b/p/")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "ImportTable cannot create local secondary indexes (index ByEmail)")

	addr := "127.0.0.1:" + closedPort(t) + "/inventory"
	r = clitest.Run(t, "", nil, "design", "html", "--config", config, "--source-dsn", "postgres://app:secret@"+addr, "--source-attempts", "1")
	require.Equal(t, exitFailure, r.Code, r.Output())
	_, rest := logLines(t, r.Stderr)
	require.Len(t, rest, 1, r.Stderr)
	require.Regexp(t, "^dynafold: cannot reach PostgreSQL at "+regexp.QuoteMeta(addr)+`: connection refused \(1 attempts? over \d+ s`, rest[0])
	require.NotContains(t, r.Output(), "secret")

	// An unknown column is known only with the source: exit 2 too.
	d := testenv.Drivers()[0]
	dsn := d.NewDB(t)
	testenv.LoadSQL(t, d.Name, dsn, clitest.RepoPath("testdata/portfolios/"+d.Name+".sql"))
	cfg, err := os.ReadFile(config)
	require.NoError(t, err)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(string(cfg), "PortfolioName: name", "PortfolioName: nmae", 1)), 0o644))
	r = clitest.Run(t, "", nil, "design", "workbench", "--config", bad, "--source-dsn", dsn)
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "nmae")
}

// Every design in configs/ writes all five artifacts through the CLI,
// without its source.
func TestDesignCmdEveryConfig(t *testing.T) {
	t.Parallel()
	configs, err := filepath.Glob(clitest.RepoPath("configs/*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, configs)
	dir := t.TempDir()
	for _, c := range configs {
		for _, kind := range []string{"workbench", "cloudformation", "cdk", "terraform", "html"} {
			out := filepath.Join(dir, strings.TrimSuffix(filepath.Base(c), ".yaml")+"."+kind)
			r := clitest.Run(t, dir, nil, "design", kind, "--config", c, "--no-source", "--out", out)
			require.Equal(t, 0, r.Code, "%s %s: %s", kind, c, r.Output())
			require.Equal(t, "dynafold: wrote "+out+"\n", r.Stderr)
			st, err := os.Stat(out)
			require.NoError(t, err)
			require.NotZero(t, st.Size())
		}
	}
}

// Every artifact names the mapping file without the machine's directories:
// from an absolute --config outside the working directory it says the
// file's base name, from one inside it the path relative to it. Neither
// the temporary directory nor $HOME appears in any of them.
func TestDesignCmdConfigPathNotLeaked(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile(clitest.RepoPath("configs/portfolios.yaml"))
	require.NoError(t, err)
	root := t.TempDir()
	outside := filepath.Join(root, "elsewhere", "shop.yaml")
	wd := filepath.Join(root, "work")
	inside := filepath.Join(wd, "designs", "shop.yaml")
	for _, p := range []string{outside, inside} {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, body, 0o644))
	}
	home, _ := os.UserHomeDir()
	for _, tc := range []struct{ config, name string }{{outside, "shop.yaml"}, {inside, "designs/shop.yaml"}} {
		for _, kind := range []string{"workbench", "cloudformation", "cdk", "terraform", "html"} {
			r := clitest.Run(t, wd, nil, "design", kind, "--config", tc.config, "--no-source")
			require.Equal(t, 0, r.Code, "%s %s: %s", kind, tc.config, r.Output())
			require.Contains(t, r.Stdout, tc.name, "%s names the mapping file", kind)
			require.NotContains(t, r.Stdout, root, "%s from %s leaks the directory", kind, tc.config)
			require.NotContains(t, r.Stdout, filepath.Dir(tc.config), kind)
			if len(home) > 1 {
				require.NotContains(t, r.Stdout, home, "%s leaks $HOME", kind)
			}
		}
	}
}

// Each design subcommand's help lists only the flags that act on what it
// writes: --import-from only where the table is defined, --sample and
// --sample-keys only where sample items are shown, --measure-sample only on
// the page that shows plan's measurements; design itself lists none of them.
func TestDesignCmdHelpListsOwnFlags(t *testing.T) {
	t.Parallel()
	own := map[string][]string{
		"":               nil,
		"workbench":      {"--sample", "--sample-keys"},
		"cloudformation": {"--import-from"},
		"cdk":            {"--import-from"},
		"terraform":      {"--import-from"},
		"html":           {"--sample", "--sample-keys", "--measure-sample"},
	}
	all := []string{"--sample", "--sample-keys", "--measure-sample", "--import-from"}
	for sub, flags := range own {
		args := []string{"design", "--help"}
		if sub != "" {
			args = []string{"design", sub, "--help"}
		}
		r := clitest.Run(t, "", nil, args...)
		require.Equal(t, 0, r.Code, r.Output())
		listed := regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z-]+)`).FindAllStringSubmatch(r.Stdout, -1)
		var got []string
		for _, m := range listed {
			if slices.Contains(all, m[1]) {
				got = append(got, m[1])
			}
		}
		require.ElementsMatch(t, flags, got, "dynafold design %s --help", sub)
		for _, f := range []string{"--no-source", "--out"} {
			require.Contains(t, r.Stdout, f, "every design subcommand takes %s", f)
		}
	}
	// A flag of another subcommand is refused, not silently ignored.
	r := clitest.Run(t, "", nil, "design", "html", "--config", clitest.RepoPath("configs/portfolios.yaml"), "--no-source", "--import-from", "s3://b/p/")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "unknown flag: --import-from")
}

// chromium finds headless Chromium (the Debian package). Without it the
// test skips, and fails under DYNAFOLD_INTEGRATION=1 (scripts/test.sh
// installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on PATH: install the Debian package chromium (apt-get install -y chromium)"
	if testenv.Integration() {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// consoleLine is a message the page logged (console.*, an uncaught
// error), as Chromium writes it with --enable-logging=stderr.
var consoleLine = regexp.MustCompile(`(?m)^\[[^\]]*:CONSOLE[^\]]*\].*$`)

// openInChromium loads a page in headless Chromium and returns its DOM
// after rendering and what its console logged.
func openInChromium(t *testing.T, bin, page string) (dom string, console []string) {
	t.Helper()
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir="+t.TempDir(),
		"--enable-logging=stderr", "--v=0", "--dump-dom", "file://"+page)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	return string(out), consoleLine.FindAllString(stderr.String(), -1)
}

// overflowCheck, put at the end of a copy of a page, writes on <body>
// what runs past the window's right edge (the page itself, a view, an
// attribute, a key cell), or "none": a page that wraps its attributes
// keeps every one of them within the window.
const overflowCheck = `<script>
(function () {
  var w = document.documentElement.clientWidth, over = [];
  if (document.documentElement.scrollWidth > w) over.push("page " + document.documentElement.scrollWidth + " > " + w);
  document.querySelectorAll(".view, .attr, td.pk, td.sk").forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.right > w + 0.5) over.push((e.id || e.className || e.tagName) + " ends at " + Math.round(r.right) + " > " + w);
  });
  document.body.setAttribute("data-overflow", over.length ? over.slice(0, 5).join("; ") : "none");
})();
</script>`

// overflowIn opens a copy of page, with overflowCheck and extra CSS, in a
// window width pixels wide, and returns what it found.
func overflowIn(t *testing.T, bin, page string, width int, css string) string {
	t.Helper()
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	probe := filepath.Join(t.TempDir(), "probe.html")
	body := strings.Replace(string(html), "</head>", "<style>"+css+"</style></head>", 1)
	body = strings.Replace(body, "</body>", overflowCheck+"</body>", 1)
	require.NoError(t, os.WriteFile(probe, []byte(body), 0o644))
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir="+t.TempDir(),
		fmt.Sprintf("--window-size=%d,900", width), "--dump-dom", "file://"+probe)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	m := regexp.MustCompile(`<body data-overflow="([^"]*)"`).FindStringSubmatch(string(out))
	require.NotNil(t, m, "the check ran")
	return m[1]
}

// On a shop in Northwind's shape that nobody tuned (testdata/shop), the
// page's sample items include every access pattern's collection: customer
// QUICK's orders, the unshipped orders of the sparse all-literal index
// (from order 10280 on), an order through the inverted index, a manager's
// reports through the self-reference. Each is checked in headless Chromium
// against what dynafold patterns returns from the migrated table: one of
// the pattern's items is a row of the pattern's view. The wide orders wrap
// their attributes within a 1,024-pixel window, and a screenshot is taken.
func TestDesignCmdHTMLShowsEveryPatternsCollection(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	d := testenv.Drivers()[0]
	tg := newTarget(t, d, "testdata/shop/shop.yaml", "testdata/shop/"+d.Name+".sql")
	dir := t.TempDir()
	r := tg.run(t, dir, "table", "create")
	require.Equal(t, 0, r.Code, r.Output())
	r = tg.run(t, dir, "migrate", "--progress", "none")
	require.Equal(t, 0, r.Code, r.Output())
	r = tg.run(t, dir, "patterns", "--output", "json")
	require.Equal(t, 0, r.Code, r.Output())
	var rep struct {
		Patterns []struct {
			Name  string `json:"name"`
			Index string `json:"index"`
			Keys  []struct {
				PK string `json:"pk"`
				SK string `json:"sk"`
			} `json:"keys"`
		} `json:"patterns"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &rep), r.Stdout)
	require.Len(t, rep.Patterns, 5)

	page := filepath.Join(dir, "shop.html")
	r = tg.run(t, dir, "design", "html", "--out", page)
	require.Equal(t, 0, r.Code, r.Output())
	require.NotContains(t, r.Stderr, "no sample item", "every collection was found")
	dom, console := openInChromium(t, bin, page)
	require.Empty(t, console)

	// view is the HTML of one view of the page: the table's or an index's.
	view := func(id string) string {
		start := strings.Index(dom, `<div class="view" id="`+id+`">`)
		require.GreaterOrEqual(t, start, 0, "view %s", id)
		end := strings.Index(dom[start:], "</div>")
		require.Greater(t, end, 0)
		return dom[start : start+end]
	}
	for _, p := range rep.Patterns {
		require.NotEmpty(t, p.Keys, "pattern %q returns items", p.Name)
		id := "view-table"
		if p.Index != "" {
			id = "view-index-" + p.Index
		}
		v := view(id)
		found := 0
		for _, k := range p.Keys {
			if strings.Contains(v, `data-key="`+k.PK+" / "+k.SK+`"`) {
				found++
			}
		}
		require.Positive(t, found, "the %s view shows an item of pattern %q (%v)", id, p.Name, p.Keys)
	}
	counts := regexp.MustCompile(`class="pattern-samples">(\d+)<`).FindAllStringSubmatch(dom, -1)
	require.Len(t, counts, len(rep.Patterns))
	for i, c := range counts {
		require.NotEqual(t, "0", c[1], "the access patterns table counts sample items of pattern %q", rep.Patterns[i].Name)
	}
	require.NotContains(t, view("view-index-Unshipped"), "No sample item is in this view")

	// Nothing runs past a 1,024-pixel window; a grid forced wider is caught.
	require.Equal(t, "none", overflowIn(t, bin, page, 1024, ""))
	require.Contains(t, overflowIn(t, bin, page, 1024, ".view { overflow-x: visible } table.grid { width: 3000px }"), "ends at")

	shot := filepath.Join(dir, "shop.png")
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir="+t.TempDir(),
		"--hide-scrollbars", "--window-size=1024,2000", "--screenshot="+shot, "file://"+page)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	png, err := os.ReadFile(shot)
	require.NoError(t, err)
	require.Greater(t, len(png), 10_000, "a screenshot of a drawn page")

	// --sample-keys names the collections instead of the patterns: a
	// customer past the first rows, by the table's partition key, and an
	// employee's partition of GSI1; one that holds nothing is said so.
	r = tg.run(t, dir, "design", "workbench", "--sample-keys", "CUSTOMER#VINET,GSI1PK=EMPLOYEE#8", "--sample-keys", "CUSTOMER#NOBODY")
	require.Equal(t, 0, r.Code, r.Output())
	require.Equal(t, `dynafold: no sample item is in the collection of --sample-keys CUSTOMER#NOBODY (PK = "CUSTOMER#NOBODY")`+"\n", r.Stderr)
	var model struct {
		DataModel []struct {
			TableData []map[string]map[string]any
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &model))
	var keys []string
	employee8 := 0
	for _, item := range model.DataModel[0].TableData {
		keys = append(keys, fmt.Sprint(item["PK"]["S"], " / ", item["SK"]["S"]))
		if item["GSI1PK"]["S"] == "EMPLOYEE#8" {
			employee8++
		}
	}
	require.Contains(t, keys, "CUSTOMER#VINET / CUSTOMER#VINET")
	require.Equal(t, 5, employee8, "five of employee 8's orders")
	require.NotContains(t, keys, "CUSTOMER#QUICK / CUSTOMER#QUICK", "the patterns' collections are not sampled then")

	r = tg.run(t, dir, "design", "html", "--sample-keys", "GSI1SK=EMPLOYEE#8")
	require.Equal(t, exitUsage, r.Code, r.Output())
	require.Contains(t, r.Stderr, "--sample-keys GSI1SK=EMPLOYEE#8: GSI1SK is a sort key, not the partition key of the table or of an index (PK, SK, GSI1PK, UnshippedPK)")
}

// The page opens in a real headless Chromium: it logs nothing to the
// console, loads nothing from anywhere, shows every entity's name and the
// keys of the sample items, and a screenshot of it is taken. A page that
// does log is caught, so the check is not vacuous.
func TestDesignCmdHTMLInChromium(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	d := testenv.Drivers()[0]
	tg := newTarget(t, d, "configs/portfolios.yaml", "testdata/portfolios/"+d.Name+".sql")
	dir := t.TempDir()
	page := filepath.Join(dir, "portfolios.html")
	r := tg.run(t, dir, "design", "html", "--out", page)
	require.Equal(t, 0, r.Code, r.Output())
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	require.NotRegexp(t, `(?i)(src|href)=|url\(|@import|<script`, string(html), "self-contained: no script, nothing loaded")

	dom, console := openInChromium(t, bin, page)
	require.Empty(t, console, "the page logs nothing")
	r = tg.run(t, dir, "design", "workbench")
	require.Equal(t, 0, r.Code, r.Output())
	var model struct {
		DataModel []struct {
			TableFacets []struct{ FacetName string }
			TableData   []map[string]map[string]any
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.Stdout), &model))
	require.Len(t, model.DataModel[0].TableFacets, 3)
	for _, f := range model.DataModel[0].TableFacets {
		require.Contains(t, dom, ">"+f.FacetName+"<", "entity %s", f.FacetName)
	}
	require.Len(t, model.DataModel[0].TableData, 10)
	for _, item := range model.DataModel[0].TableData {
		for _, k := range []string{"PK", "SK"} {
			require.Contains(t, dom, ">"+fmt.Sprint(item[k]["S"])+"<", "key %s of %v", k, item)
		}
	}

	shot := filepath.Join(dir, "portfolios.png")
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir="+t.TempDir(),
		"--hide-scrollbars", "--window-size=1280,1600", "--screenshot="+shot, "file://"+page)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	png, err := os.ReadFile(shot)
	require.NoError(t, err)
	require.Greater(t, len(png), 10_000, "a screenshot of a drawn page")
	require.Equal(t, "\x89PNG", string(png[:4]))

	// The console check catches a page that logs.
	bad := filepath.Join(dir, "bad.html")
	require.NoError(t, os.WriteFile(bad, []byte(`<p>x</p><script>console.error("design-check"); nosuch();</script>`), 0o644))
	_, console = openInChromium(t, bin, bad)
	sort.Strings(console)
	require.Len(t, console, 2, "%q", console)
	require.Contains(t, strings.Join(console, "\n"), "design-check")
}
