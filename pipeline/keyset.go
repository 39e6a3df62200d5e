package pipeline

import (
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// keySet is a Bloom filter over the item keys of a run, safe for concurrent
// use without locks (atomic OR on 64-bit words). It answers "maybe seen" or
// "certainly new" in fixed memory, whatever the size of the run; a "maybe"
// is then settled exactly by re-reading the source (see dedupe.go).
//
// It is written here rather than taken from a library because the
// libraries' filters need a mutex around TestAndAdd, which every builder
// would contend on for every item.
type keySet struct {
	words []atomic.Uint64
	bits  uint64
	k     int
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
