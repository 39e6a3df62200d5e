package cdc

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"

	"github.com/dynafold/dynafold/mapping"
)

// hash128 identifies an item key or a row in a round's owners.
type hash128 [2]uint64

// ownerSeeds are the two seeds of hashOf, chosen once per process.
var ownerSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// hashOf is a 128-bit hash of parts, each ended by a zero byte.
func hashOf(parts ...string) hash128 {
	var out hash128
	for i, seed := range ownerSeeds {
		var h maphash.Hash
		h.SetSeed(seed)
		for _, p := range parts {
			h.WriteString(p)
			h.WriteByte(0)
		}
		out[i] = h.Sum64()
	}
	return out
}

// claim is the items rows put, in the rows' order, each key recorded in
// r.owners as its row's; two rows putting one key is an error naming
// both, and a row that puts one key twice puts the last of its items with
// that key. A slice's puts are a list, not a map by key: r.owners already
// knows every key the round has claimed.
func (r *round) claim(rows []*derived) ([]*mapping.Item, error) {
	n := 0
	for _, d := range rows {
		n += len(d.items)
	}
	puts := make([]*mapping.Item, 0, n)
	for ri, d := range rows {
		id := hashOf(d.entity.Name, string(d.key))
		first := len(puts) // where this row's puts begin
		for i := range d.items {
			it := &d.items[i]
			k := hashOf(it.Key)
			prev, dup := r.owners[k]
			if dup && prev != id {
				// The other row is named when it is in this slice; one of
				// an earlier slice is known only by its hash.
				other := "another row re-derived in the same round"
				if o := putterOf(rows[:ri], it.Key); o != nil {
					other = strconv.Quote(o.id())
				}
				return nil, fmt.Errorf("two rows produce the item key %s: %s and %q (the mapping's keys are not unique for the source as it is now)",
					it.KeyText(), other, d.id())
			}
			if dup {
				if j := slices.IndexFunc(puts[first:], func(p *mapping.Item) bool { return p.Key == it.Key }); j >= 0 {
					puts[first+j] = it
					continue
				}
			}
			r.owners[k] = id
			puts = append(puts, it)
		}
	}
	return puts, nil
}

// putterOf is the row of rows that puts key, if any.
func putterOf(rows []*derived, key string) *derived {
	for _, d := range rows {
		for i := range d.items {
			if d.items[i].Key == key {
				return d
			}
		}
	}
	return nil
}

// stale is the old keys of rows that no row of the round puts: the items
// to delete. An old key the row itself puts again, the common case (an
// update that moves no item), needs no look-up in the round's owners.
func (r *round) stale(rows []*derived) map[string]bool {
	dels := map[string]bool{}
	for _, d := range rows {
		for _, k := range d.old {
			if d.puts(k) {
				continue
			}
			if _, put := r.owners[hashOf(k)]; !put {
				dels[k] = true
			}
		}
	}
	return dels
}

// puts reports whether one of d's items has the key k.
func (d *derived) puts(k string) bool {
	for i := range d.items {
		if d.items[i].Key == k {
			return true
		}
	}
	return false
}

// keysChanged reports whether d's items have other keys, or the same in
// another order, than the row index records for it.
func (d *derived) keysChanged() bool {
	if len(d.items) != len(d.old) {
		return true
	}
	for i, k := range d.old {
		if d.items[i].Key != k {
			return true
		}
	}
	return false
}
