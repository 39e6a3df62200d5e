package patterns

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/verify"
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
	count := func(op string, want int, ok bool) Check {
		return Check{What: "count", Op: op, Want: fmt.Sprint(want), Got: fmt.Sprint(res.Count), OK: ok}
	}
	if e.Count != nil {
		checks = append(checks, count("=", *e.Count, res.Count == *e.Count))
	}
	if e.MinCount != nil {
		checks = append(checks, count(">=", *e.MinCount, res.Count >= *e.MinCount))
	}
	if e.MaxCount != nil {
		checks = append(checks, count("<=", *e.MaxCount, res.Count <= *e.MaxCount))
	}
	if len(e.Types) > 0 {
		want := slices.Clone(e.Types)
		got := slices.Clone(res.Types)
		slices.Sort(want)
		slices.Sort(got)
		checks = append(checks, Check{What: "types returned", Want: strings.Join(want, ", "), Got: strings.Join(got, ", "), OK: slices.Equal(want, got)})
	}
	if e.FirstKey != nil {
		want := expectedKey(e.FirstKey.PK, e.FirstKey.SK)
		got := "(none)"
		ok := false
		if len(res.Keys) > 0 {
			got = res.Keys[0].String()
			ok = res.Keys[0].Equal(want)
		}
		checks = append(checks, Check{What: "first item", Want: want.String(), Got: got, OK: ok})
	}
	if len(e.Keys) > 0 {
		want := make([]string, len(e.Keys))
		for i, k := range e.Keys {
			want[i] = expectedKey(k.PK, k.SK).String()
		}
		got := make([]string, len(res.Keys))
		for i, k := range res.Keys {
			got[i] = k.String()
		}
		checks = append(checks, Check{What: "keys, in order", Want: strings.Join(want, "; "), Got: strings.Join(got, "; "), OK: slices.Equal(want, got)})
	}
	return checks
}

// expectedKey is a key an expectation names; "" is no sort key.
func expectedKey(pk, sk string) verify.Key {
	k := verify.Key{PK: pk}
	if sk != "" {
		k.SK = &sk
	}
	return k
}
