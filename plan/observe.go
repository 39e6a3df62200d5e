package plan

import (
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/value"
)

// What a reader learns from one row, handed to the single aggregator. The
// readers do the expensive part (building items, sizing projections) in
// parallel; the aggregator only adds numbers and updates maps.

type idxObs struct {
	// half: the item has only one of the index's two key attributes.
	half bool
	// sparseOut: the item is left out of an index its entity marks
	// sparse: true.
	sparseOut bool
	in        bool
	pk        string // the index's partition-key value
	size      int    // projected size of the item's index entry
}

type itemObs struct {
	part int
	size int
	// splitPart numbers a part of a split aggregate (from 1); splitParts
	// is the part count on its head.
	splitPart, splitParts int
	key                   string
	pkLen                 int
	idx                   []idxObs
}

type violation struct {
	check string
	msg   string
}

type rowObs struct {
	ent    int
	srcKey []value.Value
	items  []itemObs
	// viol lists the hard limits the row's items break: the row would be
	// rejected, and its items are not counted as written.
	viol   []violation
	rowErr *mapping.RowError
}

// indexShape is what it takes to tell whether an item is in an index and
// how large its entry is.
type indexShape struct {
	ix   *mapping.Index
	keys []string // attributes an item must have to be in the index
	pk   string   // the index's partition-key attribute
	sk   string   // the index's sort-key attribute, or ""
	// projected names the attributes of a KEYS_ONLY or INCLUDE entry; nil
	// for ALL, whose entry is the whole item.
	projected map[string]bool
}

func indexShapes(tbl *mapping.TableSchema) []indexShape {
	out := make([]indexShape, len(tbl.Indexes))
	for i, ix := range tbl.Indexes {
		s := indexShape{ix: ix, pk: ix.PK.Name}
		s.keys = []string{ix.PK.Name}
		if ix.SK != nil {
			s.sk = ix.SK.Name
			s.keys = append(s.keys, ix.SK.Name)
		}
		if ix.Projection != "ALL" {
			s.projected = map[string]bool{tbl.PK.Name: true, ix.PK.Name: true}
			if tbl.SK != nil {
				s.projected[tbl.SK.Name] = true
			}
			if ix.SK != nil {
				s.projected[ix.SK.Name] = true
			}
			for _, a := range ix.Include {
				s.projected[a] = true
			}
		}
		out[i] = s
	}
	return out
}

// observer turns built items into observations and checks them against
// the limits.
type observer struct {
	tbl    *mapping.TableSchema
	shapes []indexShape
	lim    Limits
}

func (o *observer) items(items []mapping.Item, dst []itemObs) []itemObs {
	for i := range items {
		it := &items[i]
		ob := itemObs{part: it.Part, size: it.Size, key: it.Key, pkLen: it.PKLen, splitPart: it.SplitPart, splitParts: it.SplitParts}
		if len(o.shapes) > 0 {
			ob.idx = make([]idxObs, len(o.shapes))
			for j, s := range o.shapes {
				ob.idx[j] = s.observe(it)
				if k := slices.IndexFunc(it.OutOf, func(o mapping.IndexOut) bool { return o.Index == s.ix.Name }); k >= 0 {
					ob.idx[j].half = !it.OutOf[k].Sparse
					ob.idx[j].sparseOut = it.OutOf[k].Sparse
				}
			}
		}
		dst = append(dst, ob)
	}
	return dst
}

func (s *indexShape) observe(it *mapping.Item) idxObs {
	for _, k := range s.keys {
		if _, ok := it.Attrs[k]; !ok {
			return idxObs{}
		}
	}
	ob := idxObs{in: true, pk: mapping.KeyText(it.Attrs[s.pk])}
	if s.projected == nil {
		ob.size = it.Size
		return ob
	}
	for name, v := range it.Attrs {
		if s.projected[name] {
			ob.size += len(name) + mapping.ValueSize(v)
		}
	}
	return ob
}

// keyBytes is what DynamoDB measures of a key attribute against the
// key-length limits: the string's or the binary's bytes.
func keyBytes(v types.AttributeValue) int {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return len(x.Value)
	case *types.AttributeValueMemberN:
		return len(x.Value)
	case *types.AttributeValueMemberB:
		return len(x.Value)
	}
	return 0
}

// check returns the limits the items break.
func (o *observer) check(ep *mapping.EntityPlan, items []mapping.Item) []violation {
	var out []violation
	part := func(it *mapping.Item) string {
		if len(ep.Items) > 1 {
			return fmt.Sprintf("item %s: ", it.Type)
		}
		return ""
	}
	// One violation per row for its parts over the split limit: the
	// largest, and how many.
	splitLimit := ep.SplitLimit()
	var worst *mapping.Item
	overCount := 0
	for i := range items {
		if it := &items[i]; it.SplitPart > 0 && it.Size > splitLimit {
			overCount++
			if worst == nil || it.Size > worst.Size {
				worst = it
			}
		}
	}
	if worst != nil {
		out = append(out, violation{"limit.split_part", fmt.Sprintf("%spart %d of the split item is %s bytes, key and attributes included (%s over); parts are held to %s bytes (max_bytes, and never more than the %s-byte item limit less %s)",
			part(worst), worst.SplitPart, num(worst.Size), plural(int64(overCount), "part"), num(splitLimit), num(mapping.MaxItemBytes), num(mapping.SplitMarginBytes))})
	}
	for i := range items {
		it := &items[i]
		if it.Size > o.lim.ItemBytes {
			out = append(out, violation{"limit.item_size", fmt.Sprintf("%sitem is %s bytes; the limit is %s (attribute names included)", part(it), num(it.Size), num(o.lim.ItemBytes))})
		}
		if it.PKLen > o.lim.PartitionKeyBytes {
			out = append(out, violation{"limit.key_length", fmt.Sprintf("%spartition key %s is %s bytes; the limit is %s", part(it), o.tbl.PK.Name, num(it.PKLen), num(o.lim.PartitionKeyBytes))})
		}
		if o.tbl.SK != nil {
			if n := len(it.Key) - it.PKLen - 1; n > o.lim.SortKeyBytes {
				out = append(out, violation{"limit.key_length", fmt.Sprintf("%ssort key %s is %s bytes; the limit is %s", part(it), o.tbl.SK.Name, num(n), num(o.lim.SortKeyBytes))})
			}
		}
		for _, s := range o.shapes {
			for _, k := range []string{s.pk, s.sk} {
				if k == "" || k == o.tbl.PK.Name || (o.tbl.SK != nil && k == o.tbl.SK.Name) {
					continue
				}
				v, ok := it.Attrs[k]
				if !ok {
					continue
				}
				limit, role := o.lim.SortKeyBytes, "sort"
				if k == s.pk {
					limit, role = o.lim.PartitionKeyBytes, "partition"
				}
				if n := keyBytes(v); n > limit {
					out = append(out, violation{"limit.key_length", fmt.Sprintf("%sindex %s %s key %s is %s bytes; the limit is %s", part(it), s.ix.Name, role, k, num(n), num(limit))})
				}
			}
		}
	}
	return out
}
