package verify

import (
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
)

// owners decides whether an item a sweep reads looks like one
// the mapping writes, and which entity it belongs to: it carries the
// mapping's type attribute with one of its item types, or its sort key
// starts with the constant prefix of one of its entities' sort-key
// templates (is equal to it when the template is all literal). Items that
// match neither were written by someone else and are never called stale.
type owners struct {
	typeAttr string
	skAttr   string
	byType   map[string]int
	// prefixes are tried longest first, so that "SERVER#DISK#" wins over
	// "SERVER#".
	prefixes []prefixRule
}

type prefixRule struct {
	prefix string
	exact  bool
	entity int
}

func newOwners(p *mapping.Plan) *owners {
	o := &owners{typeAttr: p.Table.TypeAttribute, byType: map[string]int{}}
	if p.Table.SK != nil {
		o.skAttr = p.Table.SK.Name
	}
	for i, ep := range p.Entities {
		for _, it := range ep.Items {
			if _, dup := o.byType[it.Type]; !dup {
				o.byType[it.Type] = i
			}
			if it.SK == nil {
				continue
			}
			if lit, ok := it.SK.Literal(); ok && lit != "" {
				o.prefixes = append(o.prefixes, prefixRule{prefix: lit, exact: true, entity: i})
			} else if pre := it.SK.Prefix(); pre != "" {
				o.prefixes = append(o.prefixes, prefixRule{prefix: pre, entity: i})
			}
		}
	}
	sort.SliceStable(o.prefixes, func(i, j int) bool { return len(o.prefixes[i].prefix) > len(o.prefixes[j].prefix) })
	return o
}

// owner returns the entity index the item looks like it belongs to, or -1.
func (o *owners) owner(item map[string]types.AttributeValue) int {
	if o.typeAttr != "" {
		if s, ok := item[o.typeAttr].(*types.AttributeValueMemberS); ok {
			if i, ok := o.byType[s.Value]; ok {
				return i
			}
		}
	}
	if o.skAttr == "" {
		return -1
	}
	var sk string
	switch v := item[o.skAttr].(type) {
	case *types.AttributeValueMemberS:
		sk = v.Value
	case *types.AttributeValueMemberB:
		sk = string(v.Value)
	default:
		return -1
	}
	for _, r := range o.prefixes {
		if (r.exact && sk == r.prefix) || (!r.exact && strings.HasPrefix(sk, r.prefix)) {
			return r.entity
		}
	}
	return -1
}
