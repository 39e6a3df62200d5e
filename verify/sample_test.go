package verify

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/value"
)

func TestSampler(t *testing.T) {
	count := func(s sampler) (n int, picked map[int64]bool) {
		picked = map[int64]bool{}
		for i := range int64(10000) {
			if s.keep([]value.Value{value.IntValue(i), value.StringValue("x")}) {
				n++
				picked[i] = true
			}
		}
		return n, picked
	}
	n, a := count(newSampler(0.1, 42))
	require.InDelta(t, 1000, n, 100)
	_, again := count(newSampler(0.1, 42))
	require.Equal(t, a, again, "same seed, same rows")
	_, other := count(newSampler(0.1, 43))
	require.NotEqual(t, a, other, "another seed, other rows")
	n, _ = count(newSampler(1, 42))
	require.Equal(t, 10000, n)

	// A key read as an int from one database and a decimal from the other
	// is sampled alike.
	s := newSampler(0.5, 9)
	for i := range int64(100) {
		require.Equal(t, s.keep([]value.Value{value.IntValue(i)}), s.keep([]value.Value{value.DecimalValue(value.IntValue(i).Text())}))
	}
}
