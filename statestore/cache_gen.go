package statestore

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
)

// gen is one generation of Cached: its entries packed one after another
// in one byte slice, found through a map from a hash of their row to
// their offset. Neither the slice nor the map holds a pointer per entry,
// so the garbage collector has nothing of the cache to walk: kept as a
// map of strings to string slices, a million rows were some four million
// objects that every collection marked, and a CPU profile of a fan-out
// with the whole index in memory spent most of sync's time doing so.
//
// An entry is the row's entity, a zero byte and the row, then its item
// keys, each length-prefixed (uvarint). A replaced or removed entry stays
// in the slice as dead bytes until they outweigh the live ones, when the
// live entries are copied to a new slice.
type gen struct {
	at   map[uint64]int
	data []byte
	dead int
}

func newGen() *gen { return &gen{at: map[uint64]int{}} }

func (g *gen) len() int { return len(g.at) }

// rowRef is a row and its hash, computed once for every generation it is
// looked for in (they share the seed).
type rowRef struct {
	entity string
	row    []byte
	h      uint64
}

func newRowRef(seed maphash.Seed, entity string, row []byte) rowRef {
	var h maphash.Hash
	h.SetSeed(seed)
	_, _ = h.WriteString(entity)
	_ = h.WriteByte(0)
	_, _ = h.Write(row)
	return rowRef{entity: entity, row: row, h: h.Sum64()}
}

// find returns the offset of the row's entry; ok is false when the
// generation does not hold the row (another row may hold its hash).
func (g *gen) find(r rowRef) (off int, ok bool) {
	off, ok = g.at[r.h]
	if !ok {
		return 0, false
	}
	name, _ := g.field(off)
	n := len(r.entity)
	if len(name) != n+1+len(r.row) || string(name[:n]) != r.entity || name[n] != 0 || !bytes.Equal(name[n+1:], r.row) {
		return 0, false
	}
	return off, true
}

// field returns the length-prefixed bytes at p and the offset after them.
func (g *gen) field(p int) ([]byte, int) {
	n, w := binary.Uvarint(g.data[p:])
	p += w
	return g.data[p : p+int(n)], p + int(n)
}

// keys returns the item keys of the entry at off.
func (g *gen) keys(off int) []string {
	_, p := g.field(off)
	n, w := binary.Uvarint(g.data[p:])
	p += w
	if n == 0 {
		return nil
	}
	keys := make([]string, n)
	for i := range keys {
		var b []byte
		b, p = g.field(p)
		keys[i] = string(b)
	}
	return keys
}

// end returns the offset after the entry at off.
func (g *gen) end(off int) int {
	_, p := g.field(off)
	n, w := binary.Uvarint(g.data[p:])
	p += w
	for range n {
		_, p = g.field(p)
	}
	return p
}

func (g *gen) has(r rowRef) bool {
	_, ok := g.find(r)
	return ok
}

func (g *gen) get(r rowRef) ([]string, bool) {
	off, ok := g.find(r)
	if !ok {
		return nil, false
	}
	return g.keys(off), true
}

// set records the row's keys. displaced says another row that shared the
// row's hash left the generation for it.
func (g *gen) set(r rowRef, keys []string) (displaced bool) {
	_, ok := g.find(r)
	if old, taken := g.at[r.h]; taken {
		g.dead += g.end(old) - old
		displaced = !ok
	}
	g.at[r.h] = len(g.data)
	g.data = binary.AppendUvarint(g.data, uint64(len(r.entity)+1+len(r.row)))
	g.data = append(append(append(g.data, r.entity...), 0), r.row...)
	g.data = binary.AppendUvarint(g.data, uint64(len(keys)))
	for _, k := range keys {
		g.data = binary.AppendUvarint(g.data, uint64(len(k)))
		g.data = append(g.data, k...)
	}
	if g.dead > 1<<16 && g.dead > len(g.data)/2 {
		g.compact()
	}
	return displaced
}

// del removes the row's entry, if the generation holds it.
func (g *gen) del(r rowRef) {
	off, ok := g.find(r)
	if !ok {
		return
	}
	g.dead += g.end(off) - off
	delete(g.at, r.h)
}

// drop removes up to n entries, whichever the map yields first.
func (g *gen) drop(n int) {
	for h, off := range g.at {
		if n <= 0 {
			return
		}
		g.dead += g.end(off) - off
		delete(g.at, h)
		n--
	}
}

// compact copies the live entries to a new slice.
func (g *gen) compact() {
	data := make([]byte, 0, len(g.data)-g.dead)
	for h, off := range g.at {
		g.at[h] = len(data)
		data = append(data, g.data[off:g.end(off)]...)
	}
	g.data, g.dead = data, 0
}
