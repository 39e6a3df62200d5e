package plan

import (
	"sort"

	"github.com/cespare/xxhash/v2"
)

// The weights counted per partition-key value.
const (
	wItems = iota // items
	wBytes        // bytes (item-collection size for the table, projected bytes for a GSI)
	wUnits        // write units
	nWeights
)

// keyCounter aggregates weights per partition-key value. It is exact until
// it has seen limit distinct values; then it switches to one Space-Saving
// summary per weight (heavy hitters with a stated error bound) and a
// HyperLogLog for the number of distinct values, and its memory stops
// growing.
type keyCounter struct {
	limit int
	k     int
	exact map[string]*[nWeights]int64
	// Set after the switch.
	ss  [nWeights]*spaceSaving
	hll *hyperLogLog
}

func newKeyCounter(limit, k int) *keyCounter {
	return &keyCounter{limit: limit, k: k, exact: map[string]*[nWeights]int64{}}
}

func (c *keyCounter) add(key string, w [nWeights]int64) {
	if c.exact != nil {
		if e, ok := c.exact[key]; ok {
			for i := range w {
				e[i] += w[i]
			}
			return
		}
		if len(c.exact) < c.limit {
			v := w
			c.exact[key] = &v
			return
		}
		c.toSketch()
	}
	c.hll.add(xxhash.Sum64String(key))
	for i := range w {
		c.ss[i].add(key, w[i])
	}
}

// toSketch seeds the summaries with the largest exact counts: every key
// left out weighs no more than the smallest kept, as Space-Saving requires.
func (c *keyCounter) toSketch() {
	c.hll = &hyperLogLog{}
	keys := make([]string, 0, len(c.exact))
	for k := range c.exact {
		keys = append(keys, k)
		c.hll.add(xxhash.Sum64String(k))
	}
	for i := range c.ss {
		sort.Slice(keys, func(a, b int) bool { return c.exact[keys[a]][i] > c.exact[keys[b]][i] })
		c.ss[i] = newSpaceSaving(c.k)
		var rest int64
		for n, k := range keys {
			if n < c.k {
				c.ss[i].seed(k, c.exact[k][i])
			} else {
				rest += c.exact[k][i]
			}
		}
		c.ss[i].total += rest
	}
	c.exact = nil
}

// isExact reports whether every count is exact.
func (c *keyCounter) isExact() bool { return c.exact != nil }

// distinct is the number of distinct values (estimated after the switch).
func (c *keyCounter) distinct() int64 {
	if c.exact != nil {
		return int64(len(c.exact))
	}
	return c.hll.estimate()
}

// KeyStat is one partition-key value and what it holds. Counts that are
// not known (after the switch to heavy-hitter tracking, only the ranked
// weight is) are -1.
type KeyStat struct {
	Key        string `json:"key"`
	Items      int64  `json:"items"`
	Bytes      int64  `json:"bytes"`
	WriteUnits int64  `json:"write_units"`
	// Overstated is the most the ranked count can exceed the truth by
	// (0 when exact).
	Overstated int64 `json:"overstated_by,omitempty"`
}

// top returns the n largest values by weight w.
func (c *keyCounter) top(w, n int) []KeyStat {
	if c.exact == nil {
		var out []KeyStat
		for _, e := range c.ss[w].top(n) {
			ks := KeyStat{Key: e.key, Items: -1, Bytes: -1, WriteUnits: -1, Overstated: e.err}
			switch w {
			case wItems:
				ks.Items = e.count
			case wBytes:
				ks.Bytes = e.count
			case wUnits:
				ks.WriteUnits = e.count
			}
			out = append(out, ks)
		}
		return out
	}
	keys := make([]string, 0, len(c.exact))
	for k := range c.exact {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		wa, wb := c.exact[keys[a]][w], c.exact[keys[b]][w]
		if wa != wb {
			return wa > wb
		}
		return keys[a] < keys[b]
	})
	if len(keys) > n {
		keys = keys[:n]
	}
	out := make([]KeyStat, len(keys))
	for i, k := range keys {
		e := c.exact[k]
		out[i] = KeyStat{Key: k, Items: e[wItems], Bytes: e[wBytes], WriteUnits: e[wUnits]}
	}
	return out
}

// over returns every value whose weight w may exceed limit: exact values
// above it, or monitored heavy hitters whose upper bound is above it (any
// value above total/k is monitored). sure tells whether the lower bound
// (count minus error) is above it too.
func (c *keyCounter) over(w int, limit int64) (out []KeyStat, sure []bool) {
	if c.exact != nil {
		for k, e := range c.exact {
			if e[w] > limit {
				out = append(out, KeyStat{Key: k, Items: e[wItems], Bytes: e[wBytes], WriteUnits: e[wUnits]})
				sure = append(sure, true)
			}
		}
	} else {
		for _, e := range c.ss[w].top(c.k) {
			if e.count > limit {
				ks := KeyStat{Key: e.key, Items: -1, Bytes: -1, WriteUnits: -1, Overstated: e.err}
				switch w {
				case wItems:
					ks.Items = e.count
				case wBytes:
					ks.Bytes = e.count
				case wUnits:
					ks.WriteUnits = e.count
				}
				out = append(out, ks)
				sure = append(sure, e.count-e.err > limit)
			}
		}
	}
	idx := make([]int, len(out))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return out[idx[a]].Key < out[idx[b]].Key })
	so, ss := make([]KeyStat, len(out)), make([]bool, len(out))
	for i, j := range idx {
		so[i], ss[i] = out[j], sure[j]
	}
	return so, ss
}

// errorBound is the most any heavy-hitter count of weight w overstates
// the truth by (0 while exact).
func (c *keyCounter) errorBound(w int) int64 {
	if c.exact != nil {
		return 0
	}
	return c.ss[w].bound()
}
