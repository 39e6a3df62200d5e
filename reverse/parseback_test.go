package reverse

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/dynafold/dynafold/mapping"
)

// A shape under test, with values that respect it.
type shapeValues struct {
	shape  shape
	values []string
}

var testShapes = []shapeValues{
	{shape{alphabet: intBytes}, []string{"7", "-1", "10", "0"}},
	{shape{alphabet: digits}, []string{"3", "42", "007"}},
	{shape{fixed: 2, alphabet: "#1x"}, []string{"##", "1#", "x1", "11"}},
	{shape{}, []string{"", "a", "#", "a#b", "-", ":x", "x#", "#-"}},
	{shape{alphabet: "ab"}, []string{"a", "b", "ab", "ba"}},
}

var testLiterals = []string{"", "", "#", "#", "-", ":", "x", "A#", "#a", "##"}

// FuzzParseBack holds parseBack to its claim: whatever expression it says
// can be cut out of a rendered template is the same in every tuple of
// values that renders to the same text.
func FuzzParseBack(f *testing.F) {
	for seed := int64(0); seed < 2000; seed++ {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		rng := rand.New(rand.NewSource(seed))
		n := 1 + rng.Intn(3)
		var parts []mapping.TemplatePart
		var shapes []shapeValues
		lit := func() {
			if l := testLiterals[rng.Intn(len(testLiterals))]; l != "" {
				parts = append(parts, mapping.TemplatePart{Lit: l})
			}
		}
		lit()
		for i := 0; i < n; i++ {
			if i > 0 {
				lit()
			}
			parts = append(parts, mapping.TemplatePart{Expr: &mapping.Expr{Ref: mapping.ColumnName{Name: fmt.Sprintf("c%d", i)}}})
			shapes = append(shapes, testShapes[rng.Intn(len(testShapes))])
		}
		lit()
		ss := make([]shape, n)
		for i, s := range shapes {
			ss[i] = s.shape
		}
		cut := parseBack(parts, ss)
		seen := map[string][]string{}
		tuple := make([]string, n)
		var walk func(i int)
		walk = func(i int) {
			if i == n {
				text := renderParts(parts, tuple)
				if prev, ok := seen[text]; ok {
					for k := range tuple {
						if cut[k] == "" && prev[k] != tuple[k] {
							t.Fatalf("template %s: %q renders from %q and %q, yet part %d is said to cut back", describe(parts), text, prev, tuple, k)
						}
					}
					return
				}
				seen[text] = append([]string(nil), tuple...)
				return
			}
			for _, v := range shapes[i].values {
				tuple[i] = v
				walk(i + 1)
			}
		}
		walk(0)
	})
}

func renderParts(parts []mapping.TemplatePart, values []string) string {
	var b strings.Builder
	i := 0
	for _, p := range parts {
		if p.Expr == nil {
			b.WriteString(p.Lit)
			continue
		}
		b.WriteString(values[i])
		i++
	}
	return b.String()
}

func describe(parts []mapping.TemplatePart) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Expr == nil {
			b.WriteString(p.Lit)
		} else {
			b.WriteString(exprText(p.Expr))
		}
	}
	return b.String()
}
