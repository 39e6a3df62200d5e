package plan

import (
	"container/heap"
	"math"
	"math/bits"
	"sort"
)

// The bounded-memory structures behind the measurements.

// histogram is a log-linear histogram of non-negative sizes: exact below
// 1,024, then 128 buckets per power of two, so a quantile read from it is
// at most 1/128 (0.8%) above the true value. It holds a few thousand
// counters whatever the number of observations.
type histogram struct {
	counts []int64
	n      int64
	min    int64
	max    int64
}

const (
	histExact   = 1024 // values below are their own bucket
	histSubBits = 7    // 128 sub-buckets per power of two
)

func histIndex(v int64) int {
	if v < histExact {
		return int(v)
	}
	e := 63 - bits.LeadingZeros64(uint64(v)) // v in [2^e, 2^(e+1))
	sub := int(v>>(e-histSubBits)) & (1<<histSubBits - 1)
	return histExact + (e-10)<<histSubBits + sub
}

// histUpper is the largest value in bucket i.
func histUpper(i int) int64 {
	if i < histExact {
		return int64(i)
	}
	i -= histExact
	e := i>>histSubBits + 10
	sub := int64(i & (1<<histSubBits - 1))
	lo := int64(1)<<e + sub<<(e-histSubBits)
	return lo + int64(1)<<(e-histSubBits) - 1
}

func (h *histogram) add(v int64) {
	if v < 0 {
		v = 0
	}
	i := histIndex(v)
	if i >= len(h.counts) {
		h.counts = append(h.counts, make([]int64, i+1-len(h.counts))...)
	}
	h.counts[i]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
}

// quantile returns the upper bound of the bucket holding the q-th
// quantile, capped at the exact maximum.
func (h *histogram) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(histUpper(i), h.max)
		}
	}
	return h.max
}

// powersOfTwo folds the histogram into buckets [2^k, 2^(k+1)) (the first
// [0, 1]), leaving out the empty ones: coarse enough to draw, and exact,
// since no bucket of the histogram straddles a power of two.
func (h *histogram) powersOfTwo(scale func(int64) int64) []SizeBucket {
	var out []SizeBucket
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		lo, hi := int64(0), int64(1)
		if k := bits.Len64(uint64(histUpper(i))); k > 1 {
			lo, hi = int64(1)<<(k-1), int64(1)<<k-1
		}
		if n := len(out); n > 0 && out[n-1].Min == lo {
			out[n-1].Items += c
			continue
		}
		out = append(out, SizeBucket{Min: lo, Max: hi, Items: c})
	}
	for i := range out {
		out[i].Items = scale(out[i].Items)
	}
	return out
}

// spaceSaving finds heavy hitters in a weighted stream (Metwally et al.):
// k counters; a new key takes over the smallest counter, inheriting its
// count as its error. Every reported count is an upper bound that exceeds
// the true count by at most its error, and every error is at most
// total/k, so any key weighing more than total/k is monitored.
type spaceSaving struct {
	k     int
	total int64
	byKey map[string]*ssEntry
	h     ssHeap
}

type ssEntry struct {
	key   string
	count int64
	err   int64
	idx   int
}

type ssHeap []*ssEntry

func (h ssHeap) Len() int           { return len(h) }
func (h ssHeap) Less(i, j int) bool { return h[i].count < h[j].count }
func (h ssHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].idx = i; h[j].idx = j }
func (h *ssHeap) Push(x any)        { e := x.(*ssEntry); e.idx = len(*h); *h = append(*h, e) }
func (h *ssHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func newSpaceSaving(k int) *spaceSaving {
	return &spaceSaving{k: k, byKey: make(map[string]*ssEntry, k)}
}

// seed adds a key with an exactly known count (err 0); callers seed the
// largest counts of an exact map, which keeps the invariant that no
// unmonitored key outweighs the smallest counter.
func (s *spaceSaving) seed(key string, count int64) { s.add(key, count) }

func (s *spaceSaving) add(key string, w int64) {
	s.total += w
	if e, ok := s.byKey[key]; ok {
		e.count += w
		heap.Fix(&s.h, e.idx)
		return
	}
	if len(s.h) < s.k {
		e := &ssEntry{key: key, count: w}
		s.byKey[key] = e
		heap.Push(&s.h, e)
		return
	}
	e := s.h[0]
	delete(s.byKey, e.key)
	e.key, e.err, e.count = key, e.count, e.count+w
	s.byKey[key] = e
	heap.Fix(&s.h, 0)
}

// bound is the most any count can overstate the truth by.
func (s *spaceSaving) bound() int64 {
	if len(s.h) < s.k {
		return 0
	}
	return s.h[0].count
}

// top returns the n largest counters, largest first.
func (s *spaceSaving) top(n int) []ssEntry {
	out := make([]ssEntry, 0, len(s.h))
	for _, e := range s.h {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].count != out[j].count {
			return out[i].count > out[j].count
		}
		return out[i].key < out[j].key
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// hyperLogLog estimates the number of distinct 64-bit hashes with 2^14
// registers: a standard error of about 0.8%.
type hyperLogLog struct {
	reg [1 << hllBits]uint8
}

const hllBits = 14

func (h *hyperLogLog) add(x uint64) {
	idx := x >> (64 - hllBits)
	w := x<<hllBits | 1<<(hllBits-1) // keep the rank finite
	r := uint8(bits.LeadingZeros64(w) + 1)
	if r > h.reg[idx] {
		h.reg[idx] = r
	}
}

func (h *hyperLogLog) estimate() int64 {
	const m = float64(1 << hllBits)
	alpha := 0.7213 / (1 + 1.079/m)
	sum, zeros := 0.0, 0
	for _, r := range h.reg {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := alpha * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros)) // linear counting for small sets
	}
	return int64(math.Round(e))
}
