package pipeline

import (
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// keySet is a Bloom filter over the item keys of a run, safe for concurrent
// use. It answers "maybe seen" or "certainly new" in fixed memory, whatever
// the size of the run; a "maybe" is then settled exactly by re-reading the
// source (see dedupe.go).
//
// It is cache-line blocked: all k bits of a key fall in one 64-byte block,
// so a test costs one cache miss instead of k (BenchmarkKeySet: about 200 ns
// against 340 ns per key for an unblocked filter of the same size; backing
// it with transparent huge pages measured no better). With 64 MiB (a
// million blocks) and k = 10, 5 million keys give a false-positive rate
// near 1e-8.
//
// Test-and-add of one key must be atomic as a whole: two builders adding
// the same key at the same moment could otherwise each find some of its
// bits unset and both answer "new". A lock chosen by the key's hash
// serializes equal keys while different keys almost never wait for each
// other. (Library filters take one mutex for every call, which every builder
// would contend on for every item.)
type keySet struct {
	words   []atomic.Uint64
	blocks  uint64
	k       int
	stripes [256]sync.Mutex
}

// wordsPerBlock: a 64-byte cache line of 64-bit words, 512 bits.
const wordsPerBlock = 8

func newKeySet(bytes int) *keySet {
	blocks := max(bytes/(8*wordsPerBlock), 1024)
	s := &keySet{words: make([]atomic.Uint64, blocks*wordsPerBlock), blocks: uint64(blocks), k: 10}
	prefault(s.words)
	return s
}

// testAndAddAll adds every key and sets seen[i] when keys[i] may have been
// added before. It first touches the block of every key: those loads do
// not depend on each other, so the processor overlaps their cache and TLB
// misses, and the test-and-add pass that follows finds the blocks in cache.
// In a migration that takes the filter from about 800 ns a key to a
// fraction of it.
func (s *keySet) testAndAddAll(keys []string, seen []bool) {
	hashes := make([]uint64, len(keys))
	for i, k := range keys {
		hashes[i] = xxhash.Sum64String(k)
	}
	// A loop of nothing but independent loads keeps many misses in flight.
	var sink uint64
	for _, h := range hashes {
		sink += s.words[(h%s.blocks)*wordsPerBlock].Load()
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
	block := (h % s.blocks) * wordsPerBlock
	// Each bit position takes 9 fresh bits of a mixed hash. (Double
	// hashing inside a 512-bit block gives only 131,072 distinct bit sets,
	// so two keys in one block would too often share all their bits.)
	g := mix(h)
	used := 0
	mu := &s.stripes[h>>56]
	mu.Lock()
	defer mu.Unlock()
	seen := true
	for i := 0; i < s.k; i++ {
		if used+9 > 64 {
			g, used = mix(g), 0
		}
		bit := g & 511
		g >>= 9
		used += 9
		mask := uint64(1) << (bit & 63)
		w := &s.words[block+bit>>6]
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
