package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent, with
// the build events of `go test -json`).
type event struct {
	Time       time.Time `json:"Time"`
	Action     string    `json:"Action"`
	Package    string    `json:"Package"`
	ImportPath string    `json:"ImportPath"`
	Test       string    `json:"Test"`
	Elapsed    float64   `json:"Elapsed"`
	Output     string    `json:"Output"`
}

// pkgState is what a package has printed so far: the output of each
// top-level test (its subtests' lines included, in the order they came),
// and the package's own lines outside any test.
type pkgState struct {
	tests map[string]*testState
	order []string
	own   strings.Builder
}

type testState struct {
	out   strings.Builder
	ended bool
}

func (p *pkgState) test(name string) *testState {
	if t, ok := p.tests[name]; ok {
		return t
	}
	t := &testState{}
	p.tests[name] = t
	p.order = append(p.order, name)
	return t
}

// stream copies events from r to keep and prints the human log to w. It
// reports whether a package or a build failed.
func stream(r io.Reader, keep io.Writer, w io.Writer) (failed bool, err error) {
	pkgs := map[string]*pkgState{}
	pkg := func(name string) *pkgState {
		if p, ok := pkgs[name]; ok {
			return p
		}
		p := &pkgState{tests: map[string]*testState{}}
		pkgs[name] = p
		return p
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			// Not an event: go's own messages (a vet or setup failure).
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		if _, err := fmt.Fprintf(keep, "%s\n", line); err != nil {
			return failed, err
		}
		switch {
		case ev.Action == "build-output":
			fmt.Fprint(w, ev.Output)
		case ev.Action == "build-fail":
			failed = true
		case ev.Test != "":
			p := pkg(ev.Package)
			top, _, sub := strings.Cut(ev.Test, "/")
			t := p.test(top)
			switch {
			case ev.Action == "output":
				t.out.WriteString(ev.Output)
			case sub:
				// A subtest's end is reported with its top-level test's.
			case ev.Action == "pass" || ev.Action == "skip":
				t.ended = true
			case ev.Action == "fail":
				t.ended = true
				fmt.Fprint(w, t.out.String())
			}
		case ev.Action == "output":
			pkg(ev.Package).own.WriteString(ev.Output)
		case ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip":
			p := pkg(ev.Package)
			if ev.Action == "fail" {
				failed = true
				printUnfinished(w, p)
				fmt.Fprint(w, p.own.String())
			}
			printPackageLine(w, ev, p)
			delete(pkgs, ev.Package)
		}
	}
	return failed, sc.Err()
}

// printUnfinished prints the tests of a failed package that never ended:
// the ones running when it timed out or panicked.
func printUnfinished(w io.Writer, p *pkgState) {
	var names []string
	for _, name := range p.order {
		if !p.tests[name].ended {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "--- unfinished: %s\n", name)
		fmt.Fprint(w, p.tests[name].out.String())
	}
}

// printPackageLine prints the line `go test` prints for a package.
func printPackageLine(w io.Writer, ev event, p *pkgState) {
	switch ev.Action {
	case "pass":
		fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", ev.Package, ev.Elapsed)
	case "skip":
		fmt.Fprintf(w, "?   \t%s\t[no test files]\n", ev.Package)
	default:
		if !strings.Contains(p.own.String(), "FAIL\t"+ev.Package) {
			fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", ev.Package, ev.Elapsed)
		}
	}
}
