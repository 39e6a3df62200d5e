package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/spf13/viper"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/dynafold/dynafold/internal/docexamples"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// repoRoot is where README.md and docs/ are, seen from this package.
const repoRoot = "../.."

// docFiles returns README.md and docs/*.md, and how to name them in a
// failure (relative to the repository).
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := docexamples.Files(repoRoot)
	require.NoError(t, err)
	require.Greater(t, len(files), 10, "README.md and the pages under docs/")
	return files
}

func rel(file string) string {
	r, err := filepath.Rel(repoRoot, file)
	if err != nil {
		return file
	}
	return filepath.ToSlash(r)
}

// TestDocsExamples holds every `dynafold …` line of a fenced shell block in
// README.md and docs/*.md to the real command tree: the command must exist
// and take every flag given, with a value where it needs one, and the
// number of arguments it accepts. Placeholders (F, NAME, "$VAR") stand as
// they are; a line that needs nothing outside the repository (--help,
// version, design --no-source) is also run and must exit 0.
func TestDocsExamples(t *testing.T) {
	checked, ran := 0, 0
	for _, file := range docFiles(t) {
		cmds, err := docexamples.Commands(file, "dynafold", "bin/dynafold")
		require.NoError(t, err)
		inline, err := docexamples.InlineCommands(file, "dynafold")
		require.NoError(t, err)
		cmds = append(cmds, inline...)
		for _, c := range cmds {
			checked++
			where := rel(c.File) + ":" + strconv.Itoa(c.Line) + ": " + c.Text
			a := &app{v: viper.New(), stdout: io.Discard, stderr: io.Discard, console: newConsole(io.Discard, nil)}
			cmd, err := docexamples.Parse(a.rootCommand(), c.Words[1:])
			if err != nil {
				t.Errorf("%s\n\tdoes not parse against the dynafold command tree: %v\n\t(fix the example, or the command if the example is right)", where, err)
				continue
			}
			if args, ok := runnable(t, c.Words[1:], cmd.CommandPath()); ok {
				ran++
				var out, errb bytes.Buffer
				code := execute(context.Background(), args, strings.NewReader(""), &out, &errb)
				if code != 0 {
					t.Errorf("%s\n\tran as dynafold %s: exit %d\n\t%s", where, strings.Join(args, " "), code, errb.String())
				}
			}
		}
	}
	require.Greater(t, checked, 40, "command examples found in the docs")
	require.Greater(t, ran, 3, "examples run")
	t.Logf("%d dynafold examples parsed, %d run", checked, ran)
}

// runnable says whether an example needs nothing outside the repository,
// and returns its arguments with the repository's paths made absolute and
// --out pointed into a temporary directory.
func runnable(t *testing.T, args []string, path string) ([]string, bool) {
	if slices.Contains(args, "--help") || slices.Contains(args, "-h") || path == "dynafold version" || slices.Contains(args, "--version") {
		return args, true
	}
	if !strings.HasPrefix(path, "dynafold design") || !slices.Contains(args, "--no-source") {
		return nil, false
	}
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		switch out[i] {
		case "--config", "-c":
			p := filepath.Join(repoRoot, out[i+1])
			if _, err := os.Stat(p); err != nil {
				return nil, false
			}
			out[i+1] = p
		case "--out":
			out[i+1] = filepath.Join(t.TempDir(), filepath.Base(out[i+1]))
		}
	}
	return out, true
}

// TestDocsMakeTargets: every `make TARGET` in a fenced block names a
// target of the Makefile.
func TestDocsMakeTargets(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	require.NoError(t, err)
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z0-9_-]+):`).FindAllStringSubmatch(string(makefile), -1) {
		targets[m[1]] = true
	}
	n := 0
	for _, file := range docFiles(t) {
		cmds, err := docexamples.Commands(file, "make")
		require.NoError(t, err)
		for _, c := range cmds {
			n++
			for _, w := range c.Words[1:] {
				if !strings.HasPrefix(w, "-") && !strings.Contains(w, "=") && !targets[w] {
					t.Errorf("%s:%d: %s\n\tthe Makefile has no target %q", rel(c.File), c.Line, c.Text, w)
				}
			}
		}
	}
	require.Greater(t, n, 2, "make examples found in the docs")
}

// TestDocsLinks: every relative link in README.md and docs/*.md names a
// file that exists, and an anchor, when it has one, that a heading of the
// target makes.
func TestDocsLinks(t *testing.T) {
	n := 0
	for _, file := range docFiles(t) {
		links, err := docexamples.Links(file)
		require.NoError(t, err)
		for _, l := range links {
			n++
			if why := docexamples.CheckLink(l); why != "" {
				t.Errorf("%s:%d: link (%s): %s", rel(l.File), l.Line, l.Target, why)
			}
		}
	}
	require.Greater(t, n, 20, "relative links found in the docs")
}

// TestDocsMappings: every whole mapping file shown in the docs (a yaml
// block that starts with version:) is one dynafold accepts, as far as it
// can be checked without a database.
func TestDocsMappings(t *testing.T) {
	n := 0
	for _, file := range docFiles(t) {
		blocks, err := docexamples.Blocks(file, "yaml")
		require.NoError(t, err)
		for _, b := range blocks {
			if !strings.HasPrefix(b.Text, "version:") {
				continue
			}
			n++
			cfg, err := mapping.Parse([]byte(b.Text))
			if err == nil {
				err = mapping.Validate(cfg, mapping.Options{})
			}
			if err != nil {
				t.Errorf("%s:%d: the mapping does not load:\n\t%v", rel(b.File), b.Line, err)
			}
		}
	}
	require.Greater(t, n, 0, "whole mappings found in the docs")
}

// TestDocsJoinOnEitherWay: docs/mapping.md shows one join written both
// ways round; compiled against the source it describes, the two mappings
// pair the same columns and build the same item from the same row.
func TestDocsJoinOnEitherWay(t *testing.T) {
	blocks, err := docexamples.Blocks(filepath.Join(repoRoot, "docs", "mapping.md"), "yaml")
	require.NoError(t, err)
	schema := &mapping.Schema{Tables: map[source.TableRef]*source.Table{
		{Name: "orders"}: {Ref: source.TableRef{Name: "orders"}, PrimaryKey: []string{"id"}, Unique: [][]string{{"id"}},
			Columns: []source.Column{{Name: "id", Kind: value.Int}, {Name: "customer_id", Kind: value.Int}, {Name: "order_date", Kind: value.Date}}},
		{Name: "customers"}: {Ref: source.TableRef{Name: "customers"}, PrimaryKey: []string{"id"}, Unique: [][]string{{"id"}},
			Columns: []source.Column{{Name: "id", Kind: value.Int}, {Name: "company", Kind: value.String}}},
	}}
	row := map[string]value.Value{"id": value.IntValue(10), "customer_id": value.IntValue(7), "order_date": value.StringValue("2024-01-23"), "customer.company": value.StringValue("Alfreds Futterkiste")}
	var ons []string
	var items []map[string]any
	for _, b := range blocks {
		if !strings.HasPrefix(b.Text, "version:") || !strings.Contains(b.Text, "customer: {from: customers") {
			continue
		}
		ons = append(ons, regexp.MustCompile(`on: \{[^}]*\}`).FindString(b.Text))
		cfg, err := mapping.Parse([]byte(b.Text))
		require.NoError(t, err)
		p, err := mapping.Compile(cfg, schema, mapping.Options{})
		require.NoError(t, err, "docs/mapping.md:%d", b.Line)
		ep := p.Entity("order")
		var r value.Row
		for _, c := range ep.ColumnNames() {
			r = append(r, row[c])
		}
		built, err := ep.Build(r, nil)
		require.NoError(t, err)
		require.Len(t, built, 1)
		items = append(items, mapping.PlainJSON(&types.AttributeValueMemberM{Value: built[0].Attrs}).(map[string]any))
	}
	require.Equal(t, []string{"on: {id: customer_id}", "on: {customer_id: id}"}, ons, "the Joins section shows the join both ways round")
	require.Equal(t, "Alfreds Futterkiste", items[0]["Company"])
	require.Equal(t, items[0], items[1])
}

// TestDocsIndexKeys: the Index keys example of docs/mapping.md compiles
// against the source it describes and does what the page says: an order
// is keyed into Unshipped ("UNSHIPPED") only while shipped_date is NULL,
// and an order line's table key, read swapped, is its Inverted key.
func TestDocsIndexKeys(t *testing.T) {
	blocks, err := docexamples.Blocks(filepath.Join(repoRoot, "docs", "mapping.md"), "yaml")
	require.NoError(t, err)
	var text string
	for _, b := range blocks {
		if strings.HasPrefix(b.Text, "version:") && strings.Contains(b.Text, "Inverted: {type: global, pk: SK, sk: PK}") {
			require.Empty(t, text, "one Index keys example")
			text = b.Text
		}
	}
	require.NotEmpty(t, text)
	tbl := func(name string, pk []string, cols ...source.Column) *source.Table {
		return &source.Table{Ref: source.TableRef{Name: name}, PrimaryKey: pk, Unique: [][]string{pk}, Columns: cols}
	}
	schema := &mapping.Schema{Tables: map[source.TableRef]*source.Table{
		{Name: "orders"}: tbl("orders", []string{"order_id"}, source.Column{Name: "order_id", Kind: value.Int},
			source.Column{Name: "order_date", Kind: value.Date}, source.Column{Name: "shipped_date", Kind: value.Date}),
		{Name: "order_details"}: tbl("order_details", []string{"order_id", "product_id"}, source.Column{Name: "order_id", Kind: value.Int},
			source.Column{Name: "product_id", Kind: value.Int}, source.Column{Name: "quantity", Kind: value.Int}, source.Column{Name: "unit_price", Kind: value.Decimal}),
	}}
	cfg, err := mapping.Parse([]byte(text))
	require.NoError(t, err)
	p, err := mapping.Compile(cfg, schema, mapping.Options{})
	require.NoError(t, err)
	build := func(entity string, cols map[string]value.Value) map[string]any {
		ep := p.Entity(entity)
		var r value.Row
		for _, c := range ep.ColumnNames() {
			v, ok := cols[c]
			require.True(t, ok, "column %s", c)
			r = append(r, v)
		}
		items, err := ep.Build(r, nil)
		require.NoError(t, err)
		require.Len(t, items, 1)
		return mapping.PlainJSON(&types.AttributeValueMemberM{Value: items[0].Attrs}).(map[string]any)
	}
	unshipped := build("order", map[string]value.Value{"order_id": value.IntValue(11008), "order_date": value.StringValue("1998-04-08"), "shipped_date": value.NullValue()})
	require.Equal(t, "UNSHIPPED", unshipped["UnshippedPK"])
	shipped := build("order", map[string]value.Value{"order_id": value.IntValue(10248), "order_date": value.StringValue("1996-07-04"), "shipped_date": value.StringValue("1996-07-16")})
	require.NotContains(t, shipped, "UnshippedPK")
	line := build("order_line", map[string]value.Value{"order_id": value.IntValue(10248), "product_id": value.IntValue(11), "quantity": value.IntValue(12), "unit_price": value.DecimalValue("14.00")})
	require.Equal(t, map[string]any{"PK": "ORDER#10248", "SK": "PRODUCT#11"}, map[string]any{"PK": line["PK"], "SK": line["SK"]},
		"the Inverted index's key is SK, PK: PRODUCT#11 lists the order")
}

// TestDocsReadmeIsAFrontDoor keeps README.md short and naming the test
// commands CI and scripts rely on: `make test` (the CI tier, what .ci/run
// runs), `make test-full` and the services script.
func TestDocsReadmeIsAFrontDoor(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	lines := bytes.Count(readme, []byte("\n"))
	require.LessOrEqual(t, lines, 260, "README.md is the front door: move detail to a page under docs/ and link it")
	for _, want := range []string{"make test ", "make test-full", "scripts/services.sh", "docs/development.md"} {
		require.Contains(t, string(readme), want)
	}
	// Every page under docs/ is listed on the front door: a new page is one line there.
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	require.NoError(t, err)
	for _, d := range docs {
		require.Contains(t, string(readme), "](docs/"+filepath.Base(d)+")", "README.md's \"Where to go next\" should link %s", rel(d))
	}
}

// TestDocsWorkflows holds the CI workflows shown in the docs (a yaml block
// that starts with "# .github/workflows/") to the command tree: every
// `dynafold …` line of a step's run: parses as TestDocsExamples's do,
// GitHub's ${{ … }} expressions standing for a value and redirections left
// out, and every `go install` of dynafold names a pinned version, not
// @latest.
func TestDocsWorkflows(t *testing.T) {
	expr := regexp.MustCompile(`\$\{\{[^}]*\}\}`)
	workflows, commands, installs := 0, 0, 0
	for _, file := range docFiles(t) {
		blocks, err := docexamples.Blocks(file, "yaml")
		require.NoError(t, err)
		for _, b := range blocks {
			if !strings.HasPrefix(b.Text, "# .github/workflows/") {
				continue
			}
			workflows++
			var wf struct {
				Jobs map[string]struct {
					Steps []struct {
						Run string `json:"run"`
					} `json:"steps"`
				} `json:"jobs"`
			}
			require.NoError(t, yaml.Unmarshal([]byte(b.Text), &wf), "%s:%d", rel(b.File), b.Line)
			for job, j := range wf.Jobs {
				for _, step := range j.Steps {
					for _, line := range strings.Split(step.Run, "\n") {
						words := docexamples.Split(expr.ReplaceAllString(line, "1"))
						for i, w := range words {
							if strings.HasPrefix(w, ">") || strings.HasPrefix(w, "<") || strings.HasPrefix(w, "2>") || w == "#" {
								words = words[:i]
								break
							}
						}
						where := rel(b.File) + ":" + strconv.Itoa(b.Line) + ": job " + job + ": " + strings.TrimSpace(line)
						switch {
						case len(words) > 0 && words[0] == "dynafold":
							commands++
							a := &app{v: viper.New(), stdout: io.Discard, stderr: io.Discard, console: newConsole(io.Discard, nil)}
							if _, err := docexamples.Parse(a.rootCommand(), words[1:]); err != nil {
								t.Errorf("%s\n\tdoes not parse against the dynafold command tree: %v", where, err)
							}
						case len(words) > 2 && words[0] == "go" && words[1] == "install" && strings.Contains(words[2], "/cmd/dynafold"):
							installs++
							_, version, ok := strings.Cut(words[2], "@")
							if !ok || version == "latest" {
								t.Errorf("%s\n\tpin the version (a tag or a commit hash), not @latest", where)
							}
						}
					}
				}
			}
		}
	}
	require.Positive(t, workflows, "workflows found in the docs")
	require.GreaterOrEqual(t, commands, 3, "dynafold commands in the workflows")
	require.Positive(t, installs, "go install lines in the workflows")
}
