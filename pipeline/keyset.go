package pipeline

import (
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// keySet is a Bloom filter over the item keys of a run, safe for concurrent
// use. It answers "maybe seen" or "certainly new" in memory proportional
// to the keys of the run; a "maybe" is then settled exactly by re-reading
// the source (see dedupe.go).
//
// It is cache-line blocked: all k bits of a key fall in one 64-byte block,
// so a test costs one cache miss instead of k (BenchmarkKeySet: about 200 ns
// against 340 ns per key for an unblocked filter of the same size; backing
// it with transparent huge pages measured no better).
//
// It is sized from the run's estimate of its keys, at bitsPerKey bits a
// key, and grows instead of filling up: once the newest filter holds the
// keys it was sized for, a new one twice its size takes the new keys
// (Almeida et al.'s scalable Bloom filter), and a key is tested against
// every filter. With k = 10 and 64 bits a key, a filter filled to its
// capacity answers "maybe" for a new key about once in 13 million, and a
// run of a million keys expects about 0.01 false alarms in all (each costs
// a re-read of the source); each filter that growth adds brings its own,
// as few. So an estimate that is too low costs memory in steps, never a
// flood of false alarms, and one that is right costs 8 bytes a key, not a
// fixed 64 MiB.
//
// Test-and-add of one key must be atomic as a whole: two builders adding
// the same key at the same moment could otherwise each find some of its
// bits unset and both answer "new". A lock chosen by the key's hash
// serializes equal keys while different keys almost never wait for each
// other. (Library filters take one mutex for every call, which every builder
// would contend on for every item.) The list of filters is read under that
// lock, so of two adders of one key the second always sees every filter
// the first could have added it to.
type keySet struct {
	filters atomic.Pointer[[]*bloom]
	growMu  sync.Mutex
	stripes [256]sync.Mutex
}

// bloom is one blocked Bloom filter of a keySet.
type bloom struct {
	words    []atomic.Uint64
	blocks   uint64
	capacity int64
	added    atomic.Int64
}

const (
	// wordsPerBlock: a 64-byte cache line of 64-bit words, 512 bits.
	wordsPerBlock = 8
	// bitsPerKey and bloomK: see keySet.
	bitsPerKey = 64
	bloomK     = 10
	// minFilterBytes and maxFilterBytes bound one filter: a run of a few
	// rows still gets 64 KiB (8,192 keys), and no single filter is larger
	// than the 64 MiB this filter always took before it was sized.
	minFilterBytes = 64 << 10
	maxFilterBytes = 64 << 20
)

// newKeySet returns a filter whose first part takes bytes (clamped to
// [minFilterBytes, maxFilterBytes]).
func newKeySet(bytes int) *keySet {
	s := &keySet{}
	fs := []*bloom{newBloom(bytes)}
	s.filters.Store(&fs)
	return s
}

// keySetFor sizes a filter for about keys keys (negative: unknown, taken
// as a million).
func keySetFor(keys int64) *keySet {
	if keys < 0 {
		keys = 1 << 20
	}
	return newKeySet(int(min(keys*bitsPerKey/8, maxFilterBytes)))
}

func newBloom(bytes int) *bloom {
	bytes = min(max(bytes, minFilterBytes), maxFilterBytes)
	blocks := bytes / (8 * wordsPerBlock)
	b := &bloom{words: make([]atomic.Uint64, blocks*wordsPerBlock), blocks: uint64(blocks), capacity: int64(blocks) * 512 / bitsPerKey}
	prefault(b.words)
	return b
}

// bytes is the memory of every filter so far.
func (s *keySet) bytes() int {
	n := 0
	for _, b := range *s.filters.Load() {
		n += len(b.words) * 8
	}
	return n
}

// testAndAddAll adds every key and sets seen[i] when keys[i] may have been
// added before. It first touches the block of every key in the newest
// filter: those loads do not depend on each other, so the processor
// overlaps their cache and TLB misses, and the test-and-add pass that
// follows finds the blocks in cache. In a migration that takes the filter
// from about 800 ns a key to a fraction of it.
func (s *keySet) testAndAddAll(keys []string, seen []bool) {
	hashes := make([]uint64, len(keys))
	for i, k := range keys {
		hashes[i] = xxhash.Sum64String(k)
	}
	fs := *s.filters.Load()
	newest := fs[len(fs)-1]
	// A loop of nothing but independent loads keeps many misses in flight.
	var sink uint64
	for _, h := range hashes {
		sink += newest.words[(h%newest.blocks)*wordsPerBlock].Load()
	}
	touched.Add(sink & 0) // keeps the loads from being optimized away
	for i, h := range hashes {
		seen[i] = s.testAndAddHash(h)
	}
}

var touched atomic.Uint64

// testAndAdd adds key and reports whether it may have been added before.
func (s *keySet) testAndAdd(key string) bool {
	return s.testAndAddHash(xxhash.Sum64String(key))
}

func (s *keySet) testAndAddHash(h uint64) bool {
	mu := &s.stripes[h>>56]
	mu.Lock()
	defer mu.Unlock()
	fs := *s.filters.Load()
	for _, b := range fs[:len(fs)-1] {
		if b.test(h) {
			return true
		}
	}
	newest := fs[len(fs)-1]
	if newest.testAndAdd(h) {
		return true
	}
	if newest.added.Add(1) == newest.capacity {
		s.grow(newest)
	}
	return false
}

// grow adds a filter twice the size of full, the newest.
func (s *keySet) grow(full *bloom) {
	s.growMu.Lock()
	defer s.growMu.Unlock()
	fs := *s.filters.Load()
	if fs[len(fs)-1] != full {
		return
	}
	next := append(fs[:len(fs):len(fs)], newBloom(2*len(full.words)*8))
	s.filters.Store(&next)
}

// test reports whether every bit of h is set. Each bit position takes 9 fresh bits of a mixed hash. (Double hashing
// inside a 512-bit block gives only 131,072 distinct bit sets, so two keys
// in one block would too often share all their bits.)
func (b *bloom) test(h uint64) bool {
	block := (h % b.blocks) * wordsPerBlock
	g := mix(h)
	used := 0
	for i := 0; i < bloomK; i++ {
		if used+9 > 64 {
			g, used = mix(g), 0
		}
		bit := g & 511
		g >>= 9
		used += 9
		if b.words[block+bit>>6].Load()&(uint64(1)<<(bit&63)) == 0 {
			return false
		}
	}
	return true
}

// testAndAdd sets the bits of h and reports whether they were all set.
// The caller holds h's stripe lock.
func (b *bloom) testAndAdd(h uint64) bool {
	block := (h % b.blocks) * wordsPerBlock
	g := mix(h)
	used := 0
	seen := true
	for i := 0; i < bloomK; i++ {
		if used+9 > 64 {
			g, used = mix(g), 0
		}
		bit := g & 511
		g >>= 9
		used += 9
		mask := uint64(1) << (bit & 63)
		w := &b.words[block+bit>>6]
		if w.Load()&mask == 0 {
			seen = false
			w.Or(mask)
		}
	}
	return seen
}

// mix is SplitMix64's finalizer: every output bit depends on every input bit.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
