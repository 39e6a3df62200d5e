package plan

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// pat builds a pattern: literal text, with '*' for a hole of any bytes
// and '9' for a hole of digits.
func pat(s string) pattern {
	var p pattern
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*':
			p = append(p, token{hole: true, cs: anyBytes})
		case '9':
			p = append(p, token{hole: true, cs: intSet})
		default:
			p = append(p, token{lit: s[i]})
		}
	}
	return p
}

func TestIntersects(t *testing.T) {
	cases := []struct {
		a, b            string
		full, alnumOnly bool
	}{
		{"PORTFOLIO", "SERVER#*", false, false},
		{"PORTFOLIO", "PORTFOLIO", true, true},
		{"*", "PORTFOLIO", true, true},
		{"9", "PORTFOLIO", false, false},
		{"9", "9", true, true},
		{"9", "*", true, true},
		{"SERVER#*", "SERVER#*#LOG#9", true, false},
		{"SERVER#9", "SERVER#*#LOG#9", false, false},
		{"A#*", "A#B", true, true},
		{"*#*", "*", true, false},
		{"X*", "X", false, false}, // a hole is never empty
		{"*Y", "X*", true, true},
		{"ORDER#9", "ORDER#9#ITEM#9", false, false},
	}
	for _, c := range cases {
		t.Run(c.a+" vs "+c.b, func(t *testing.T) {
			a, b := pat(c.a), pat(c.b)
			require.Equal(t, c.full, intersects(a, b))
			require.Equal(t, c.full, intersects(b, a), "symmetric")
			require.Equal(t, c.alnumOnly, intersects(a.restrict(alnum), b.restrict(alnum)))
		})
	}
}
