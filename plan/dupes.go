package plan

import "github.com/cespare/xxhash/v2"

// dupSet detects item keys produced twice. It keeps a 64-bit hash of
// every key up to limit keys, which makes detection exact but for hash
// collisions (probability below n²/2^65 for n keys). Past the limit it
// stops adding and only checks later keys against the ones it holds, so
// duplicates among those later keys go unseen; the report states how many
// keys were checked that way.
type dupSet struct {
	limit int
	seen  map[uint64]struct{}
	// unchecked counts keys that arrived after the set was full.
	unchecked int64
	dups      int64
}

func newDupSet(limit int) *dupSet {
	return &dupSet{limit: limit, seen: make(map[uint64]struct{}, min(limit, 1<<16))}
}

// add records key and reports whether it was seen before.
func (d *dupSet) add(key string) bool {
	h := xxhash.Sum64String(key)
	if _, ok := d.seen[h]; ok {
		d.dups++
		return true
	}
	if len(d.seen) < d.limit {
		d.seen[h] = struct{}{}
	} else {
		d.unchecked++
	}
	return false
}
