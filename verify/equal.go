package verify

import (
	"bytes"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/mapping"
)

// Equal reports whether two attribute values are the same DynamoDB value:
// numbers are compared as numbers (1.50 equals 1.5), sets as sets (order
// and repeats do not matter), maps by key and lists in order. Values of
// different types are never equal ("1" is not 1).
func Equal(a, b types.AttributeValue) bool {
	switch x := a.(type) {
	case *types.AttributeValueMemberS:
		y, ok := b.(*types.AttributeValueMemberS)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberN:
		y, ok := b.(*types.AttributeValueMemberN)
		return ok && canonicalNumber(x.Value) == canonicalNumber(y.Value)
	case *types.AttributeValueMemberB:
		y, ok := b.(*types.AttributeValueMemberB)
		return ok && bytes.Equal(x.Value, y.Value)
	case *types.AttributeValueMemberBOOL:
		y, ok := b.(*types.AttributeValueMemberBOOL)
		return ok && x.Value == y.Value
	case *types.AttributeValueMemberNULL:
		_, ok := b.(*types.AttributeValueMemberNULL)
		return ok
	case *types.AttributeValueMemberSS:
		y, ok := b.(*types.AttributeValueMemberSS)
		return ok && sameSet(x.Value, y.Value, func(s string) string { return s })
	case *types.AttributeValueMemberNS:
		y, ok := b.(*types.AttributeValueMemberNS)
		return ok && sameSet(x.Value, y.Value, canonicalNumber)
	case *types.AttributeValueMemberBS:
		y, ok := b.(*types.AttributeValueMemberBS)
		return ok && sameSet(x.Value, y.Value, func(b []byte) string { return string(b) })
	case *types.AttributeValueMemberL:
		y, ok := b.(*types.AttributeValueMemberL)
		return ok && slices.EqualFunc(x.Value, y.Value, Equal)
	case *types.AttributeValueMemberM:
		y, ok := b.(*types.AttributeValueMemberM)
		return ok && EqualItems(x.Value, y.Value)
	}
	return false
}

// EqualItems reports whether two items (or map values) hold the same
// attributes with Equal values.
func EqualItems(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok || !Equal(av, bv) {
			return false
		}
	}
	return true
}

// canonicalNumber is a number in mapping's canonical form, so that equal
// numbers written differently compare equal; text that is not a number
// (which DynamoDB would not store) is compared as it is.
func canonicalNumber(s string) string {
	if n, err := mapping.NormalizeNumber(s); err == nil {
		return n
	}
	return s
}

func sameSet[T any](a, b []T, key func(T) string) bool {
	as, bs := setKeys(a, key), setKeys(b, key)
	return slices.Equal(as, bs)
}

// setKeys returns the distinct keys of a set's elements, sorted.
func setKeys[T any](elems []T, key func(T) string) []string {
	out := make([]string, len(elems))
	for i, e := range elems {
		out[i] = key(e)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Change operations, named for what migrate does to the target item.
const (
	// OpAdd: the source has the attribute, the target item does not.
	OpAdd = "added"
	// OpRemove: the target item has an attribute the source does not make.
	OpRemove = "removed"
	// OpChange: both have it, with different values.
	OpChange = "changed"
)

// Change is one attribute that differs between the target item (Old) and
// the item the source makes (New).
type Change struct {
	Attribute string `json:"attribute"`
	Op        string `json:"op"`
	Old       *Value `json:"old,omitempty"`
	New       *Value `json:"new,omitempty"`
}

// Diff lists, sorted by attribute name, what writing want over have would
// change. A nil have (no item) makes every attribute added; a nil want
// makes every attribute removed.
func Diff(have, want map[string]types.AttributeValue) []Change {
	var out []Change
	for name, nv := range want {
		ov, ok := have[name]
		switch {
		case !ok:
			out = append(out, Change{Attribute: name, Op: OpAdd, New: valueOf(nv)})
		case !Equal(ov, nv):
			out = append(out, Change{Attribute: name, Op: OpChange, Old: valueOf(ov), New: valueOf(nv)})
		}
	}
	for name, ov := range have {
		if _, ok := want[name]; !ok {
			out = append(out, Change{Attribute: name, Op: OpRemove, Old: valueOf(ov)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Attribute < out[j].Attribute })
	return out
}
