package mapping

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/value"
)

// addNested adds the nested attributes carried by item number idx and
// appends the result to dst: the item itself, or its parts when a nested
// attribute was split.
func (e *EntityPlan) addNested(row value.Row, nested [][]value.Row, idx int, item Item, dst []Item, a *Arena, lim limits) ([]Item, error) {
	var split *NestPlan
	var splitElems []types.AttributeValue
	var splitKeys []string
	for k, np := range e.nests {
		if np.item != idx {
			continue
		}
		var children []value.Row
		if k < len(nested) {
			children = nested[k]
		}
		av, elems, keys, err := np.value(children, a)
		if err != nil {
			return dst, e.rowError(row, np.Name, err)
		}
		size := len(np.Name) + ValueSize(av)
		// An aggregate that may split does so past the split limit, the
		// item limit less the margin, so that no item it writes is within
		// the margin of the limit; the others are held to the limit.
		limit := lim.item
		if np.overflow == overflowSplit {
			limit = min(lim.item, lim.split)
		}
		over := (np.maxBytes > 0 && size > np.maxBytes) || item.Size+size > limit
		if !over {
			item.Attrs[np.Name] = av
			item.Size += size
			continue
		}
		switch np.overflow {
		case overflowGzip:
			b, err := gzipJSON(av)
			if err != nil {
				return dst, e.rowError(row, np.Name, err)
			}
			gsize := len(np.Name) + len(b)
			if (np.maxBytes > 0 && gsize > np.maxBytes) || item.Size+gsize > lim.item {
				return dst, e.rowError(row, np.Name, fmt.Errorf("nested attribute is %d bytes, and still %d gzip-compressed; over %s", size, gsize, np.limitText(lim)))
			}
			item.Attrs[np.Name] = &types.AttributeValueMemberB{Value: b}
			item.Size += gsize
		case overflowSplit:
			split, splitElems, splitKeys = np, elems, keys
		default:
			return dst, e.rowError(row, np.Name, fmt.Errorf("nested attribute is %d bytes, over %s (overflow: reject)", size, np.limitText(lim)))
		}
	}
	if item.Size > lim.item {
		return dst, e.rowError(row, "", fmt.Errorf("item is %d bytes with its nested attributes; DynamoDB items are at most %d bytes", item.Size, lim.item))
	}
	if split == nil {
		return append(dst, item), nil
	}
	parts, err := split.split(e, item, splitElems, splitKeys, lim)
	if err != nil {
		return dst, e.rowError(row, split.Name, err)
	}
	return append(dst, parts...), nil
}

func (np *NestPlan) limitText(lim limits) string {
	if np.maxBytes > 0 {
		return fmt.Sprintf("max_bytes %d", np.maxBytes)
	}
	return fmt.Sprintf("the %d-byte item limit", lim.item)
}

// value builds the attribute and, for splitting, its elements in order
// (with their map keys for a map).
func (np *NestPlan) value(children []value.Row, a *Arena) (types.AttributeValue, []types.AttributeValue, []string, error) {
	elems := make([]types.AttributeValue, len(children))
	var keys []string
	if np.asMap {
		keys = make([]string, len(children))
	}
	for i, ch := range children {
		el, err := np.element(ch, a)
		if err != nil {
			return nil, nil, nil, err
		}
		elems[i] = el
		if np.asMap {
			k := ch[np.mapKey]
			if k.IsNull() {
				return nil, nil, nil, fmt.Errorf("a child row has a NULL map key")
			}
			keys[i] = k.Text()
		}
	}
	if !np.asMap {
		return &types.AttributeValueMemberL{Value: elems}, elems, nil, nil
	}
	m := make(map[string]types.AttributeValue, len(elems))
	for i, k := range keys {
		if _, dup := m[k]; dup {
			return nil, nil, nil, fmt.Errorf("two child rows have the map key %s", quoteValue(k))
		}
		m[k] = elems[i]
	}
	return &types.AttributeValueMemberM{Value: m}, elems, keys, nil
}

// split spreads the nested attribute over numbered items of the same
// collection. The item itself, the head, keeps its key, its index keys and
// every other attribute, plus the part count; the elements go into items
// whose sort key is the item's followed by #PART#0001, #PART#0002, …, so
// that a begins_with query on the item's sort key returns the item and
// then its parts in order, and indexes keyed on the item are not disturbed
// (parts carry no index keys). Elements are never cut: a part holds whole
// elements, as many as fit.
//
// A part's whole size counts: its key, its sort key with the #PART#
// suffix, its part number, the type attribute and the nested attribute.
// Every part is at most max_bytes, and never over the split limit (the item
// limit less SplitMarginBytes).
//
// The parts come first and the head last: writers that keep that order
// (the pipeline writes a head only once its parts are acknowledged) never
// show a head whose parts are not all there.
func (np *NestPlan) split(e *EntityPlan, base Item, elems []types.AttributeValue, keys []string, lim limits) ([]Item, error) {
	tbl := e.table
	pk := base.Attrs[tbl.PK.Name]
	sk := base.Attrs[tbl.SK.Name].(*types.AttributeValueMemberS).Value
	budget := min(lim.item, lim.split)
	if np.maxBytes > 0 {
		budget = min(budget, np.maxBytes)
	}
	// fixed is what part p takes besides its elements: the attributes
	// every part has, the nested attribute's name and its list or map's
	// own 3 bytes.
	fixedBase := len(tbl.PK.Name) + ValueSize(pk) + len(tbl.SK.Name) + len(sk) + len(np.partAttr) + len(np.Name) + 3
	if e.typeAttr != "" {
		if tv, ok := base.Attrs[e.typeAttr]; ok {
			fixedBase += len(e.typeAttr) + ValueSize(tv)
		}
	}
	fixed := func(p int) int {
		return fixedBase + len(fmt.Sprintf(partFormat, p)) + numberSize(strconv.Itoa(p))
	}
	var chunks [][2]int
	start, size := 0, fixed(1)
	for i, el := range elems {
		es := 1 + ValueSize(el)
		if keys != nil {
			es += len(keys[i])
		}
		if size+es > budget && i > start {
			chunks = append(chunks, [2]int{start, i})
			start, size = i, fixed(len(chunks)+1)
		}
		if size+es > budget && !lim.lax {
			return nil, fmt.Errorf("element %d is %d bytes; with the %d bytes of a part's key and attributes it is over %s", i, es, size, np.budgetText(lim))
		}
		size += es
	}
	chunks = append(chunks, [2]int{start, len(elems)})
	if len(chunks) > maxParts {
		return nil, fmt.Errorf("splitting into %d parts; at most %d are numbered in order (raise max_bytes)", len(chunks), maxParts)
	}

	head := base
	head.Attrs = maps.Clone(base.Attrs)
	head.Attrs[np.partsAttr] = &types.AttributeValueMemberN{Value: strconv.Itoa(len(chunks))}
	head.Size = ItemSize(head.Attrs)
	head.SplitParts = len(chunks)
	if head.Size > lim.item {
		return nil, fmt.Errorf("the split item's head is %d bytes without %s; the item limit is %d", head.Size, np.Name, lim.item)
	}
	parts := make([]Item, 0, len(chunks)+1)
	for p, c := range chunks {
		partSK := sk + fmt.Sprintf(partFormat, p+1)
		if len(partSK) > lim.sk {
			return nil, fmt.Errorf("part sort key %s is over %d bytes", quoteValue(partSK), lim.sk)
		}
		attrs := map[string]types.AttributeValue{
			tbl.PK.Name: pk,
			tbl.SK.Name: &types.AttributeValueMemberS{Value: partSK},
			np.partAttr: &types.AttributeValueMemberN{Value: strconv.Itoa(p + 1)},
		}
		if e.typeAttr != "" {
			if tv, ok := base.Attrs[e.typeAttr]; ok {
				attrs[e.typeAttr] = tv
			}
		}
		if keys != nil {
			m := make(map[string]types.AttributeValue, c[1]-c[0])
			for i := c[0]; i < c[1]; i++ {
				m[keys[i]] = elems[i]
			}
			attrs[np.Name] = &types.AttributeValueMemberM{Value: m}
		} else {
			attrs[np.Name] = &types.AttributeValueMemberL{Value: elems[c[0]:c[1]]}
		}
		size := ItemSize(attrs)
		if size > budget && !lim.lax {
			// The chunking above counts exactly what ItemSize does; this
			// guards that promise.
			return nil, fmt.Errorf("part %d of the split item is %d bytes, over %s", p+1, size, np.budgetText(lim))
		}
		key := base.Key[:base.PKLen] + "\x00" + partSK
		parts = append(parts, Item{Attrs: attrs, Key: key, PKLen: base.PKLen, Size: size, Entity: e, Type: base.Type, Origin: base.Origin, SplitPart: p + 1})
	}
	return append(parts, head), nil
}

// SplitLimit is the most a part of the entity's split aggregates may be:
// the smallest max_bytes of its nests that split, and never more than
// SplitItemBytes; 0 when none splits.
func (e *EntityPlan) SplitLimit() int {
	limit := 0
	for _, np := range e.nests {
		if np.overflow != overflowSplit {
			continue
		}
		b := SplitItemBytes
		if np.maxBytes > 0 {
			b = min(b, np.maxBytes)
		}
		if limit == 0 || b < limit {
			limit = b
		}
	}
	return limit
}

// budgetText says what a part of a split is held to.
func (np *NestPlan) budgetText(lim limits) string {
	if np.maxBytes > 0 && np.maxBytes <= min(lim.item, lim.split) {
		return fmt.Sprintf("max_bytes %d", np.maxBytes)
	}
	return fmt.Sprintf("the %d-byte split limit (the %d-byte item limit less a %d-byte margin)", min(lim.item, lim.split), MaxItemBytes, SplitMarginBytes)
}

// gzipJSON encodes the attribute as plain JSON and gzip-compresses it: the
// form an application decompresses and parses back.
func gzipJSON(av types.AttributeValue) ([]byte, error) {
	doc, err := json.Marshal(PlainJSON(av))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(doc); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
