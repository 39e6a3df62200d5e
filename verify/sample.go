package verify

import (
	"math"

	"github.com/cespare/xxhash/v2"

	"github.com/dynafold/dynafold/value"
)

// sampler chooses rows by a hash of their primary key and a seed: the same
// seed picks the same rows on every run and against either database (the
// hash covers the key's kind and exact text, not a driver's Go types).
type sampler struct {
	seed uint64
	// limit is the fraction scaled to the hash's range; every hash below it
	// is in the sample.
	limit uint64
	all   bool
}

func newSampler(fraction float64, seed uint64) sampler {
	if fraction >= 1 {
		return sampler{all: true}
	}
	return sampler{seed: seed, limit: uint64(fraction * math.MaxUint64)}
}

// keep reports whether the row whose key is key is in the sample.
func (s sampler) keep(key []value.Value) bool {
	if s.all {
		return true
	}
	h := xxhash.NewWithSeed(s.seed)
	var buf []byte
	for _, v := range key {
		buf = append(buf[:0], byte(kindClass(v.Kind)))
		buf = value.AppendText(buf, v)
		buf = append(buf, 0)
		_, _ = h.Write(buf)
	}
	return h.Sum64() < s.limit
}

// kindClass folds the integer-like kinds together, so that a key that is
// an int in one database and a decimal in the other is sampled alike.
func kindClass(k value.Kind) value.Kind {
	switch k {
	case value.Int, value.Decimal, value.Bool:
		return value.Int
	}
	return k
}
