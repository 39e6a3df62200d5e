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
// Bits are set with atomic OR. Test-and-add of one key must still be
// atomic as a whole: two builders adding the same key at the same moment
// could otherwise each find some of its bits unset and both answer "new".
// A lock chosen by the key's hash serializes equal keys while different
// keys almost never wait for each other. (Library filters take one mutex
// for every call, which every builder would contend on for every item.)
type keySet struct {
	words   []atomic.Uint64
	bits    uint64
	k       int
	stripes [256]sync.Mutex
}

// newKeySet sizes the filter to bytes of memory. With 64 MiB and 10 hash
// functions, 5 million keys give a false-positive rate near 1e-11 per key.
func newKeySet(bytes int) *keySet {
	words := max(bytes/8, 1024)
	return &keySet{words: make([]atomic.Uint64, words), bits: uint64(words) * 64, k: 10}
}

// testAndAdd adds key and reports whether it may have been added before.
func (s *keySet) testAndAdd(key string) bool {
	h := xxhash.Sum64String(key)
	h1, h2 := h, (h>>33|h<<31)*0x9e3779b97f4a7c15|1
	mu := &s.stripes[h>>56]
	mu.Lock()
	defer mu.Unlock()
	seen := true
	for i := 0; i < s.k; i++ {
		bit := (h1 + uint64(i)*h2) % s.bits
		mask := uint64(1) << (bit & 63)
		if s.words[bit>>6].Or(mask)&mask == 0 {
			seen = false
		}
	}
	return seen
}
