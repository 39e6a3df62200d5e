package mapping

import (
	"maps"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// JoinParts is split's inverse over a query's answer: the parts of a
// split item (its sort key followed by #PART#0001, …) whose head is in
// the answer are taken out of it, and their elements put back, in part
// order, into the head's nested attribute, so that head and parts are
// the one item the mapping built before it split it. A part whose head
// is not in the answer stays as it is, where it is. items is not
// changed: a head that takes parts is a copy, without its part count.
func (p *Plan) JoinParts(items []map[string]types.AttributeValue) []map[string]types.AttributeValue {
	if p.Table.SK == nil || !p.splits() {
		return items
	}
	pkName, skName := p.Table.PK.Name, p.Table.SK.Name
	heads := map[itemKeyText]int{}
	for i, it := range items {
		k, ok := itemKey(it, pkName, skName)
		if !ok {
			continue
		}
		if _, _, part := partOf(k.sk); !part {
			heads[k] = i
		}
	}
	// parts[h] are the parts of head h, by position in items.
	parts := map[int][]int{}
	taken := make([]bool, len(items))
	for i, it := range items {
		k, ok := itemKey(it, pkName, skName)
		if !ok {
			continue
		}
		base, _, part := partOf(k.sk)
		if !part {
			continue
		}
		h, ok := heads[itemKeyText{k.pk, base}]
		if !ok || p.splitNest(items[h], it) == nil {
			continue
		}
		parts[h] = append(parts[h], i)
		taken[i] = true
	}
	if len(parts) == 0 {
		return items
	}
	out := make([]map[string]types.AttributeValue, 0, len(items))
	for i, it := range items {
		switch {
		case taken[i]:
		case parts[i] != nil:
			out = append(out, p.joinHead(it, items, parts[i], skName))
		default:
			out = append(out, it)
		}
	}
	return out
}

// joinHead is head with the elements of its parts (positions in items)
// put back into its nested attribute, in part order.
func (p *Plan) joinHead(head map[string]types.AttributeValue, items []map[string]types.AttributeValue, parts []int, skName string) map[string]types.AttributeValue {
	np := p.splitNest(head, items[parts[0]])
	slices.SortFunc(parts, func(a, b int) int {
		_, x, _ := partOf(items[a][skName].(*types.AttributeValueMemberS).Value)
		_, y, _ := partOf(items[b][skName].(*types.AttributeValueMemberS).Value)
		return x - y
	})
	whole := maps.Clone(head)
	delete(whole, np.partsAttr)
	var list []types.AttributeValue
	var m map[string]types.AttributeValue
	for _, i := range parts {
		switch v := items[i][np.Name].(type) {
		case *types.AttributeValueMemberL:
			list = append(list, v.Value...)
		case *types.AttributeValueMemberM:
			if m == nil {
				m = map[string]types.AttributeValue{}
			}
			maps.Copy(m, v.Value)
		}
	}
	if np.asMap {
		whole[np.Name] = &types.AttributeValueMemberM{Value: m}
	} else {
		whole[np.Name] = &types.AttributeValueMemberL{Value: list}
	}
	return whole
}

// splits reports whether any entity has a nested attribute that splits.
func (p *Plan) splits() bool {
	for _, e := range p.Entities {
		if e.SplitLimit() > 0 {
			return true
		}
	}
	return false
}

// splitNest is the split nested attribute that part is a part of, for
// head: a nest that splits, of head's entity when the table has a type
// attribute, whose name and part-number attribute the part carries.
func (p *Plan) splitNest(head, part map[string]types.AttributeValue) *NestPlan {
	for _, e := range p.Entities {
		if ta := p.Table.TypeAttribute; ta != "" && attrText(head[ta]) != "S"+e.Name {
			continue
		}
		for _, np := range e.nests {
			if np.overflow != overflowSplit {
				continue
			}
			_, hasElems := part[np.Name]
			_, hasNumber := part[np.partAttr].(*types.AttributeValueMemberN)
			if hasElems && hasNumber {
				return np
			}
		}
	}
	return nil
}

type itemKeyText struct{ pk, sk string }

// itemKey is an item's partition key as text and its String sort key.
func itemKey(it map[string]types.AttributeValue, pkName, skName string) (itemKeyText, bool) {
	sk, ok := it[skName].(*types.AttributeValueMemberS)
	pk := attrText(it[pkName])
	if !ok || pk == "" {
		return itemKeyText{}, false
	}
	return itemKeyText{pk, sk.Value}, true
}

// attrText is a key or type attribute's value as text, its type first so
// that "1" the string and 1 the number differ; "" for any other.
func attrText(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return "S" + v.Value
	case *types.AttributeValueMemberN:
		return "N" + v.Value
	case *types.AttributeValueMemberB:
		return "B" + string(v.Value)
	}
	return ""
}

// partOf splits a part's sort key into its head's and its part number;
// part is false for a sort key that is not a part's (see partFormat).
func partOf(sk string) (base string, number int, part bool) {
	const suffix = len("#PART#0000")
	if len(sk) < suffix || sk[len(sk)-suffix:len(sk)-4] != "#PART#" {
		return "", 0, false
	}
	n, err := strconv.Atoi(sk[len(sk)-4:])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return sk[:len(sk)-suffix], n, true
}
