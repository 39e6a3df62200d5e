package mapping

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/dynafold/dynafold/ddbjson"
)

// attrSet is an item's attributes while it is built: a list, not a map,
// because on the migrate hot path the attributes only live until they are
// encoded into Item.Body, and a map per item (its allocation, hashing and
// iteration) was a fifth of the build. Names are unique: the compiler
// refuses an attribute set twice, and the key, type and TTL names are
// reserved.
type attrSet []namedValue

type namedValue struct {
	name string
	// json is name as a JSON object key, "name":, encoded once when the
	// mapping is compiled; empty: encoded here.
	json string
	v    types.AttributeValue
}

// jsonName is name as a JSON object key: "name":.
func jsonName(name string) string {
	return string(append(ddbjson.AppendString(nil, name), ':'))
}

// entityNames are the JSON forms of an entity's fixed attribute names.
type entityNames struct{ pk, sk, typ, ttl string }

func newEntityNames(e *EntityPlan) entityNames {
	n := entityNames{pk: jsonName(e.table.PK.Name), typ: jsonName(e.typeAttr), ttl: jsonName(e.ttlAttr)}
	if e.table.SK != nil {
		n.sk = jsonName(e.table.SK.Name)
	}
	return n
}

func (s attrSet) index(name string) int {
	for i := range s {
		if s[i].name == name {
			return i
		}
	}
	return -1
}

func (s attrSet) has(name string) bool { return s.index(name) >= 0 }

// without returns s with name left out.
func (s attrSet) without(name string) attrSet {
	if i := s.index(name); i >= 0 {
		return append(s[:i], s[i+1:]...)
	}
	return s
}

// size is ItemSize of the set.
func (s attrSet) size() int {
	n := 0
	for _, a := range s {
		n += len(a.name) + ValueSize(a.v)
	}
	return n
}

// largest returns the attribute taking the most bytes, name included (the
// first by name on a tie), for error messages.
func (s attrSet) largest() (string, int) {
	name, best := "", -1
	for _, a := range s {
		if n := len(a.name) + ValueSize(a.v); n > best || (n == best && a.name < name) {
			name, best = a.name, n
		}
	}
	return name, best
}

// toMap returns the set as Item.Attrs.
func (s attrSet) toMap() map[string]types.AttributeValue {
	m := make(map[string]types.AttributeValue, len(s))
	for _, a := range s {
		m[a.name] = a.v
	}
	return m
}

// appendJSON encodes the set as a DynamoDB JSON item (ddbjson's encoding of
// the same attributes, in the set's order).
func (s attrSet) appendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	for i, a := range s {
		if i > 0 {
			dst = append(dst, ',')
		}
		if a.json != "" {
			dst = append(dst, a.json...)
		} else {
			dst = append(ddbjson.AppendString(dst, a.name), ':')
		}
		dst = ddbjson.AppendValue(dst, a.v)
	}
	return append(dst, '}')
}
