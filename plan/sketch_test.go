package plan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"
)

func TestHistogramQuantilesWithinBound(t *testing.T) {
	var h histogram
	var vals []int64
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		v := int64(rng.ExpFloat64() * 3000)
		vals = append(vals, v)
		h.add(v)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	require.Equal(t, vals[0], h.min)
	require.Equal(t, vals[len(vals)-1], h.max)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 0.999, 1} {
		truth := vals[int(math.Ceil(q*float64(len(vals))))-1]
		got := h.quantile(q)
		require.GreaterOrEqual(t, got, truth, "q=%g", q)
		require.LessOrEqual(t, float64(got), float64(truth)*(1+1.0/128)+1, "q=%g", q)
	}
}

func TestHistogramExactBelowOneKB(t *testing.T) {
	var h histogram
	for _, v := range []int64{5, 7, 7, 900} {
		h.add(v)
	}
	require.Equal(t, int64(7), h.quantile(0.5))
	require.Equal(t, int64(900), h.quantile(0.99))
	for v := int64(0); v < 1<<20; v += 97 {
		i := histIndex(v)
		require.LessOrEqual(t, v, histUpper(i))
		if i > 0 {
			require.Greater(t, v, histUpper(i-1))
		}
	}
}

// skewed returns a stream where key i appears about n/(i+1) times
// (Zipf-like), shuffled, and the true counts.
func skewed(n int) ([]string, map[string]int64) {
	var stream []string
	truth := map[string]int64{}
	for i := 0; len(stream) < n; i++ {
		k := fmt.Sprintf("k%d", i)
		c := max(1, n/10/(i+1))
		for range c {
			stream = append(stream, k)
		}
		truth[k] += int64(c)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(stream), func(i, j int) { stream[i], stream[j] = stream[j], stream[i] })
	return stream, truth
}

func TestSpaceSavingBounds(t *testing.T) {
	stream, truth := skewed(50_000)
	const k = 50
	s := newSpaceSaving(k)
	for _, key := range stream {
		s.add(key, 1)
	}
	total := int64(len(stream))
	require.Equal(t, total, s.total)
	require.LessOrEqual(t, s.bound(), total/k)
	monitored := map[string]bool{}
	for _, e := range s.top(k) {
		monitored[e.key] = true
		require.GreaterOrEqual(t, e.count, truth[e.key], e.key)
		require.LessOrEqual(t, e.count-e.err, truth[e.key], e.key)
		require.LessOrEqual(t, e.err, total/k)
	}
	for key, c := range truth {
		if c > total/k {
			require.True(t, monitored[key], "%s (%d) must be monitored", key, c)
		}
	}
	require.Equal(t, "k0", s.top(1)[0].key)
}

func TestHyperLogLogWithinThreePercent(t *testing.T) {
	for _, n := range []int{100, 10_000, 300_000} {
		var h hyperLogLog
		for i := range n {
			h.add(xxhash.Sum64String(fmt.Sprintf("key-%d", i)))
		}
		require.InEpsilon(t, float64(n), float64(h.estimate()), 0.03, "n=%d", n)
	}
}

func TestKeyCounterSwitchesToSketch(t *testing.T) {
	stream, truth := skewed(20_000)
	c := newKeyCounter(100, 40)
	for _, key := range stream {
		c.add(key, [nWeights]int64{1, 10, 2})
	}
	require.False(t, c.isExact())
	require.InEpsilon(t, float64(len(truth)), float64(c.distinct()), 0.03)
	top := c.top(wItems, 3)
	require.Equal(t, "k0", top[0].Key)
	require.GreaterOrEqual(t, top[0].Items, truth["k0"])
	require.LessOrEqual(t, top[0].Items-top[0].Overstated, truth["k0"])
	require.Equal(t, int64(-1), top[0].Bytes, "other weights are not tracked per key after the switch")
	bytes := c.top(wBytes, 1)[0]
	require.Equal(t, "k0", bytes.Key)
	require.GreaterOrEqual(t, bytes.Bytes, 10*truth["k0"])

	over, sure := c.over(wItems, truth["k0"]-1)
	require.Equal(t, "k0", over[0].Key)
	require.True(t, sure[0])

	exact := newKeyCounter(100_000, 40)
	for _, key := range stream {
		exact.add(key, [nWeights]int64{1, 10, 2})
	}
	require.True(t, exact.isExact())
	require.Equal(t, KeyStat{Key: "k0", Items: truth["k0"], Bytes: 10 * truth["k0"], WriteUnits: 2 * truth["k0"]}, exact.top(wUnits, 1)[0])
}

func TestDupSetBound(t *testing.T) {
	d := newDupSet(3)
	for _, k := range []string{"a", "b", "a", "c", "d", "d", "b"} {
		d.add(k)
	}
	// "a" and "b" are caught; "d" arrived after the set was full, so its
	// repeat is not.
	require.Equal(t, int64(2), d.dups)
	require.Equal(t, int64(2), d.unchecked)
}
