package patterns

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/value"
)

func proj(kv ...string) projection {
	p := projection{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i][0] == '#' {
			p[kv[i][1:]] = &types.AttributeValueMemberN{Value: kv[i+1]}
			continue
		}
		p[kv[i]] = &types.AttributeValueMemberS{Value: kv[i+1]}
	}
	return p
}

// Answers compare as multisets unless ordered; numbers as numbers; a row
// and an item that share some attributes pair up, so that the attribute
// that differs is named; and an ordered answer with the same rows in
// another order reports the first position where they part.
func TestDiffAnswers(t *testing.T) {
	a, b, c := proj("ID", "a", "#N", "1.50"), proj("ID", "b", "#N", "2"), proj("ID", "c", "#N", "3")
	for _, tc := range []struct {
		name      string
		want, got []projection
		ordered   bool
		onlySQL   []int
		onlyItems []int
		pairs     [][2]int
		order     int
	}{
		{"same, any order", []projection{a, b}, []projection{b, proj("ID", "a", "#N", "1.5")}, false, nil, nil, nil, -1},
		{"ordered, other order", []projection{a, b}, []projection{b, a}, true, nil, nil, nil, 0},
		{"ordered, same order", []projection{a, b, c}, []projection{a, b, c}, true, nil, nil, nil, -1},
		{"repeats count", []projection{a, a}, []projection{a}, false, []int{1}, nil, nil, -1},
		{"missing and extra", []projection{a, b}, []projection{a, c}, false, []int{1}, []int{1}, nil, -1},
		{"one attribute differs", []projection{a, b}, []projection{a, proj("ID", "b", "#N", "7")}, false, nil, nil, [][2]int{{1, 1}}, -1},
		{"absent on one side", []projection{proj("ID", "a")}, []projection{a}, false, nil, nil, [][2]int{{0, 0}}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := diffAnswers(tc.want, tc.got, tc.ordered)
			require.Equal(t, tc.onlySQL, d.onlySQL)
			require.Equal(t, tc.onlyItems, d.onlyItems)
			require.Equal(t, tc.pairs, d.pairs)
			require.Equal(t, tc.order, d.order)
		})
	}
}

// The same seed chooses the same tuples whatever order the source gave
// them in; another seed, others; all of them when there are few.
func TestSampleIsDeterministic(t *testing.T) {
	var rows, reversed []value.Row
	for i := range 50 {
		rows = append(rows, value.Row{value.IntValue(int64(i))})
		reversed = append([]value.Row{{value.IntValue(int64(i))}}, reversed...)
	}
	one := sample(rows, 5, 1, "p")
	require.Len(t, one, 5)
	require.Equal(t, one, sample(reversed, 5, 1, "p"))
	require.NotEqual(t, one, sample(rows, 5, 2, "p"))
	require.Len(t, sample(rows, 100, 1, "p"), 50)
	require.Len(t, sample(append(rows, rows...), 100, 1, "p"), 50, "repeated tuples are compared once")
}
