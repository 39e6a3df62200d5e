package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/dynafold/dynafold/"

// layers are the product's packages, bottom up (docs/architecture.md): a
// package imports only packages of lower layers. Packages not listed are
// test and benchmark harnesses (internal/testenv, the conformance suites
// such as sink/sinktest, the fuzzer, the benchmark's and the fault
// proxy's commands): they may import anything, and no product package
// imports them.
var layers = [][]string{
	{"value", "retry", "ddbjson", "internal/render", "internal/connerr", "internal/durable", "internal/redact", "internal/strictyaml"},
	{"source"},
	{"source/postgres", "source/mysql", "mapping", "checkpoint"},
	{"source/drivers", "sink", "reverse"},
	{"pipeline", "statestore"},
	{"verify", "export", "plan", "metrics"},
	{"incremental", "patterns", "cdc"},
	{"shadow", "design"},
	{"cmd/dynafold"},
}

// pending are imports the architecture rules out that the code still
// has, each with what removes it. The test fails when one is gone, so
// that the exception goes with it.
var pending = map[string]string{
	"sink -> mapping":   "the item package below mapping (issue 44, part 2): sink needs Item and TableSchema, not the compiler",
	"export -> mapping": "the item package below mapping (issue 44, part 2)",
}

// sinkForCDC is what cdc may use of sink: the interface and its
// vocabulary, and the one write path over it (Writers), never the
// DynamoDB writer itself (cdc.Writer is an interface).
var sinkForCDC = []string{"Sink", "Results", "Stats", "Writers", "ErrGaveUp", "UnreachableError"}

func TestImportsFollowTheLayers(t *testing.T) {
	layer := map[string]int{}
	for i, ps := range layers {
		for _, p := range ps {
			layer[p] = i
		}
	}
	pkgs := productImports(t)
	seen := map[string]bool{}
	for pkg, imports := range pkgs {
		l, product := layer[pkg]
		if !product {
			continue
		}
		for _, imp := range imports {
			edge := pkg + " -> " + imp
			il, isProduct := layer[imp]
			switch {
			case pending[edge] != "":
				seen[edge] = true
			case !isProduct:
				t.Errorf("%s imports %s, a test harness (product packages are those of layers, in internal/archtest)", pkg, imp)
			case il >= l:
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only lower layers (docs/architecture.md)", pkg, l, imp, il)
			}
		}
	}
	for edge, why := range pending {
		if !seen[edge] {
			t.Errorf("%s is gone (%s): remove it from pending, and make it a rule", edge, why)
		}
	}
	for _, ps := range layers {
		for _, p := range ps {
			if _, ok := pkgs[p]; !ok {
				t.Errorf("layers names %s, which is not a package", p)
			}
		}
	}
}

func TestCDCUsesTheSinksInterfaceOnly(t *testing.T) {
	for _, name := range selectors(t, "cdc", "sink") {
		if !slices.Contains(sinkForCDC, name) {
			t.Errorf("cdc uses sink.%s: it may use only %v (the interface, not the DynamoDB writer)", name, sinkForCDC)
		}
	}
}

// The CLI is a thin shell: its functions read flags, call the package
// that does the work and print. The ones that grew past 60 lines were
// doing a stage's work.
func TestCLIFunctionsAreShort(t *testing.T) {
	const most = 60
	dir := filepath.Join(root(t), "cmd", "dynafold")
	fset := token.NewFileSet()
	for _, f := range goFiles(t, dir) {
		af, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > most {
				t.Errorf("%s: %s is %d lines, over %d: move its stage's work into the package that owns it", filepath.Base(f), fd.Name.Name, n, most)
			}
		}
	}
}

// productImports is every package of the module (by its path inside it)
// and the module's packages its non-test files import.
func productImports(t *testing.T) map[string][]string {
	t.Helper()
	base := root(t)
	out := map[string][]string{}
	err := filepath.WalkDir(base, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != base && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bench-results" || name == "test-results") {
			return filepath.SkipDir
		}
		files := goFiles(t, path)
		if len(files) == 0 {
			return nil
		}
		rel, _ := filepath.Rel(base, path)
		rel = filepath.ToSlash(rel)
		set := map[string]bool{}
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			require.NoError(t, err)
			for _, is := range af.Imports {
				p, _ := strconv.Unquote(is.Path.Value)
				if strings.HasPrefix(p, module) {
					set[strings.TrimPrefix(p, module)] = true
				}
			}
		}
		out[rel] = nil
		for p := range set {
			out[rel] = append(out[rel], p)
		}
		slices.Sort(out[rel])
		return nil
	})
	require.NoError(t, err)
	return out
}

// selectors lists the names pkg's non-test files use of the package they
// import as name.
func selectors(t *testing.T, pkg, name string) []string {
	t.Helper()
	var out []string
	for _, f := range goFiles(t, filepath.Join(root(t), pkg)) {
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		require.NoError(t, err)
		ast.Inspect(af, func(n ast.Node) bool {
			if se, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := se.X.(*ast.Ident); ok && id.Name == name && !slices.Contains(out, se.Sel.Name) {
					out = append(out, se.Sel.Name)
				}
			}
			return true
		})
	}
	return out
}

// goFiles are dir's non-test Go files.
func goFiles(t *testing.T, dir string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	return slices.DeleteFunc(all, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
}

// root is the module's root: two directories up from this package.
func root(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Dir(filepath.Dir(wd))
}
