package patterns

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dynafold/dynafold/mapping"
)

// check evaluates a pattern's expectations against what it returned.
func check(e *mapping.PatternCheck, res *Result) []Check {
	checks := []Check{}
	if res.Error != "" {
		return append(checks, Check{What: "query runs", Want: "no error", Got: res.Error})
	}
	if e == nil {
		return checks
	}
	if e.Count != nil {
		checks = append(checks, Check{What: "count", Want: fmt.Sprint(*e.Count), Got: fmt.Sprint(res.Count), OK: res.Count == *e.Count})
	}
	if e.MinCount != nil {
		checks = append(checks, Check{What: "count at least", Want: fmt.Sprint(*e.MinCount), Got: fmt.Sprint(res.Count), OK: res.Count >= *e.MinCount})
	}
	if len(e.Types) > 0 {
		want := slices.Clone(e.Types)
		got := slices.Clone(res.Types)
		slices.Sort(want)
		slices.Sort(got)
		checks = append(checks, Check{What: "types returned", Want: strings.Join(want, ", "), Got: strings.Join(got, ", "), OK: slices.Equal(want, got)})
	}
	if e.FirstKey != nil {
		want := Key{PK: e.FirstKey.PK, SK: e.FirstKey.SK}
		got := "(none)"
		ok := false
		if len(res.Keys) > 0 {
			got = res.Keys[0].String()
			ok = res.Keys[0] == want
		}
		checks = append(checks, Check{What: "first item", Want: want.String(), Got: got, OK: ok})
	}
	if len(e.Keys) > 0 {
		want := make([]string, len(e.Keys))
		for i, k := range e.Keys {
			want[i] = Key{PK: k.PK, SK: k.SK}.String()
		}
		got := make([]string, len(res.Keys))
		for i, k := range res.Keys {
			got[i] = k.String()
		}
		checks = append(checks, Check{What: "keys, in order", Want: strings.Join(want, "; "), Got: strings.Join(got, "; "), OK: slices.Equal(want, got)})
	}
	return checks
}
