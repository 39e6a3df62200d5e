package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// timing is one finished top-level test, or one package's whole run.
type timing struct {
	pkg, test string
	seconds   float64
	result    string
}

// readTimings returns the top-level tests and the packages that finished
// in the event files.
func readTimings(files []string) (tests, pkgs []timing, err error) {
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var ev event
			if json.Unmarshal(sc.Bytes(), &ev) != nil {
				continue
			}
			if ev.Action != "pass" && ev.Action != "fail" {
				continue
			}
			switch {
			case ev.Test == "":
				pkgs = append(pkgs, timing{pkg: ev.Package, seconds: ev.Elapsed, result: ev.Action})
			case !strings.Contains(ev.Test, "/"):
				tests = append(tests, timing{pkg: ev.Package, test: ev.Test, seconds: ev.Elapsed, result: ev.Action})
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	return tests, pkgs, nil
}

// printSlowest prints the n slowest top-level tests and the packages'
// times. A parallel test's time counts from when it was let run, not from
// when it was paused waiting for its turn.
func printSlowest(w io.Writer, n int, files []string) error {
	tests, pkgs, err := readTimings(files)
	if err != nil {
		return err
	}
	bySeconds := func(s []timing) {
		sort.SliceStable(s, func(i, j int) bool { return s[i].seconds > s[j].seconds })
	}
	bySeconds(tests)
	bySeconds(pkgs)
	fmt.Fprintf(w, "the %d slowest tests of %d:\n", min(n, len(tests)), len(tests))
	for _, t := range tests[:min(n, len(tests))] {
		fmt.Fprintf(w, "%8.1fs  %-4s  %s  %s\n", t.seconds, t.result, shortPkg(t.pkg), t.test)
	}
	fmt.Fprintf(w, "packages by time:\n")
	for _, p := range pkgs {
		fmt.Fprintf(w, "%8.1fs  %-4s  %s\n", p.seconds, p.result, shortPkg(p.pkg))
	}
	return nil
}

// shortPkg drops the module path every package shares.
func shortPkg(p string) string {
	return strings.TrimPrefix(p, "github.com/dynafold/dynafold/")
}
