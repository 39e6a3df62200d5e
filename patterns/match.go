package patterns

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
)

// Matcher is an access pattern's key condition as a test of one item,
// for tools that look for the pattern's items among items they built
// (design's samples): it holds when the item's partition key, of the
// pattern's index or of the table, is the pattern's (any of its shards)
// and its sort key meets the pattern's condition. Limit and order are
// not part of it.
type Matcher struct {
	// PK and SK are the key attribute names of the pattern's index or
	// table (SK "" when it has no sort key).
	PK, SK string
	pks    []types.AttributeValue
	ok     func(sk types.AttributeValue) bool
}

// Match builds the matcher of a pattern's query, from the same typed
// values the query sends.
func Match(plan *mapping.Plan, q mapping.PatternQuery) (*Matcher, error) {
	qs, _, err := buildQueries(plan, q)
	if err != nil {
		return nil, err
	}
	m := &Matcher{PK: plan.Table.PK.Name, ok: func(types.AttributeValue) bool { return true }}
	sk := plan.Table.SK
	if q.Index != "" {
		ix := plan.Table.Index(q.Index) // buildQueries found it
		m.PK, sk = ix.PK.Name, ix.SK
	}
	if sk != nil {
		m.SK = sk.Name
	}
	for _, in := range qs {
		m.pks = append(m.pks, in.ExpressionAttributeValues[":pk"])
	}
	vals := qs[0].ExpressionAttributeValues
	cmp := func(sk types.AttributeValue, name string) int { return mapping.CompareKey(sk, vals[name]) }
	present := func(f func(types.AttributeValue) bool) func(types.AttributeValue) bool {
		return func(sk types.AttributeValue) bool { return sk != nil && f(sk) }
	}
	switch {
	case q.SKEquals != nil:
		m.ok = present(func(sk types.AttributeValue) bool { return cmp(sk, ":sk") == 0 })
	case q.SKLess != nil:
		m.ok = present(func(sk types.AttributeValue) bool { return cmp(sk, ":sk") < 0 })
	case q.SKLessEq != nil:
		m.ok = present(func(sk types.AttributeValue) bool { return cmp(sk, ":sk") <= 0 })
	case q.SKGreater != nil:
		m.ok = present(func(sk types.AttributeValue) bool { return cmp(sk, ":sk") > 0 })
	case q.SKGreaterEq != nil:
		m.ok = present(func(sk types.AttributeValue) bool { return cmp(sk, ":sk") >= 0 })
	case q.SKBetween != nil:
		m.ok = present(func(sk types.AttributeValue) bool { return cmp(sk, ":lo") >= 0 && cmp(sk, ":hi") <= 0 })
	case q.SKBeginsWith != nil:
		prefix := vals[":sk"]
		m.ok = present(func(sk types.AttributeValue) bool {
			if b, ok := sk.(*types.AttributeValueMemberB); ok {
				p, _ := prefix.(*types.AttributeValueMemberB)
				return p != nil && strings.HasPrefix(string(b.Value), string(p.Value))
			}
			return strings.HasPrefix(mapping.KeyText(sk), mapping.KeyText(prefix))
		})
	}
	return m, nil
}

// Holds reports whether the item is one the pattern's query returns. An
// item without both of the index's key attributes is not in the index, so
// never holds.
func (m *Matcher) Holds(item map[string]types.AttributeValue) bool {
	pk := item[m.PK]
	var sk types.AttributeValue
	if m.SK != "" {
		if sk = item[m.SK]; sk == nil {
			return false
		}
	}
	if pk == nil {
		return false
	}
	for _, want := range m.pks {
		if mapping.CompareKey(pk, want) == 0 && sameType(pk, want) {
			return m.ok(sk)
		}
	}
	return false
}

func sameType(a, b types.AttributeValue) bool {
	switch a.(type) {
	case *types.AttributeValueMemberS:
		_, ok := b.(*types.AttributeValueMemberS)
		return ok
	case *types.AttributeValueMemberN:
		_, ok := b.(*types.AttributeValueMemberN)
		return ok
	case *types.AttributeValueMemberB:
		_, ok := b.(*types.AttributeValueMemberB)
		return ok
	}
	return false
}
