package sink

import "github.com/dynafold/dynafold/mapping"

// Parts before heads. mapping splits a row's item that is too large for
// DynamoDB into numbered parts and a head: the item that keeps the key and
// says how many parts there are (Item.SplitParts). The parts are the
// SplitParts items built just before their head. A reader must never find
// a head without all of its parts, so a head is written only once every
// one of its parts is acknowledged. The rule is defined here once; each
// writer keeps it at the grain its acknowledgements come at:
//
//   - Writers.WriteSet (cdc's rounds): the set is known whole and is waited
//     for anyway, so every head waits for every other item of the set
//     (HeadsLast): one barrier, nothing tracked per aggregate.
//   - the pipeline's split gates (pipeline/splitgate.go): items stream,
//     and acknowledgements come back a batch at a time, in any order, from
//     a file sink only once its file is durable; a barrier would stall the
//     stream, so each head is held until its own parts (SplitAggregates)
//     are acknowledged, and a row that fails has its written parts deleted.
//   - export's sink acknowledges a file's items once the file is durable,
//     and keeps the items of split aggregates whole until then (InSplit):
//     the gates find an acknowledged item's aggregate through it.

// IsHead reports whether it is the head of a split aggregate.
func IsHead(it *mapping.Item) bool { return it.SplitParts > 0 }

// InSplit reports whether it belongs to a split aggregate: a head or a
// part.
func InSplit(it *mapping.Item) bool { return it.SplitParts > 0 || it.SplitPart > 0 }

// HeadsLast returns items without the heads of split aggregates (rest, in
// their order) and the heads (in theirs). A set without heads, the common
// case, is returned as it is.
func HeadsLast(items []*mapping.Item) (rest, heads []*mapping.Item) {
	n := 0
	for _, it := range items {
		if IsHead(it) {
			n++
		}
	}
	if n == 0 {
		return items, nil
	}
	rest = make([]*mapping.Item, 0, len(items)-n)
	heads = make([]*mapping.Item, 0, n)
	for _, it := range items {
		if IsHead(it) {
			heads = append(heads, it)
		} else {
			rest = append(rest, it)
		}
	}
	return rest, heads
}

// SplitAggregates calls fn for every split aggregate among one row's
// items, given in build order: with the index of its head and that of its
// first part (its parts are items[first:head]).
func SplitAggregates(items []mapping.Item, fn func(head, first int)) {
	for i := range items {
		if n := items[i].SplitParts; n > 0 {
			fn(i, i-n)
		}
	}
}
