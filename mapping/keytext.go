package mapping

import (
	"encoding/base64"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// KeyText is a key attribute's value as every report, log line and error
// message shows it: a string or a number as itself, binary in base64 as
// DynamoDB's JSON and the AWS CLI show it, a missing value as "". It is for
// people: an item's identity is KeyIdentity's form.
func KeyText(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberB:
		return base64.StdEncoding.EncodeToString(v.Value)
	case nil:
		return ""
	}
	// Not a key type: a table read back may hold anything.
	return fmt.Sprint(av)
}

// KeyText is the item's key as every report, log line and error message
// shows it: TableSchema.KeyTextOf's (PK "…", SK "…"). An item without an
// entity (made by hand, or a delete of a key a row no longer produces)
// shows its parts as Item.Key holds them, without names: ("…", "…").
func (it *Item) KeyText() string {
	if it.Entity != nil && it.Entity.table != nil {
		return it.Entity.table.KeyTextOf(it.Key, it.PKLen)
	}
	if len(it.Key) <= it.PKLen {
		return fmt.Sprintf("(%q)", it.Key)
	}
	return fmt.Sprintf("(%q, %q)", it.Key[:it.PKLen], it.Key[it.PKLen+1:])
}

// KeyTextOf is an item key in Item.Key's form, its partition key the
// first pkLen bytes, as every report, log line and error message shows
// it: each key attribute named, its value by KeyText and quoted,
// (PK "ORDER#1") or (PK "ORDER#1", SK "LINE#2").
func (t *TableSchema) KeyTextOf(key string, pkLen int) string {
	s := fmt.Sprintf("(%s %q", t.PK.Name, KeyText(keyAttr(key[:pkLen], t.PK.Type)))
	if t.SK != nil {
		sk := key[min(pkLen+1, len(key)):]
		s += fmt.Sprintf(", %s %q", t.SK.Name, KeyText(keyAttr(sk, t.SK.Type)))
	}
	return s + ")"
}

// KeyIdentity is a key attribute's part of Item.Key, the item's identity:
// a string as itself, a number in canonical form, binary as its raw bytes;
// ok is false for a missing value or a type no key has (a table read back
// may hold anything).
//
// It is not KeyText, on purpose: an identity must turn back into the
// attribute value (TableSchema.KeyAttributes, DeleteItem), which base64
// would not without the key's type, and must be equal for equal keys,
// hence numbers canonical ("1.50" and "1.5" are one key to DynamoDB).
func KeyIdentity(av types.AttributeValue) (string, bool) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, true
	case *types.AttributeValueMemberN:
		if n, err := NormalizeNumber(v.Value); err == nil {
			return n, true
		}
		return v.Value, true // not a number DynamoDB would store: as it is
	case *types.AttributeValueMemberB:
		return string(v.Value), true
	}
	return "", false
}

// ItemKey is an item's key in Item.Key's form (partition key, NUL, sort
// key; each part KeyIdentity's), from its attributes and the names of the
// key attributes, sk "" when the table has no sort key. It matches items
// read back or returned unprocessed to the items built; ok is false when a
// key attribute is missing or of no key type.
func ItemKey(item map[string]types.AttributeValue, pk, sk string) (string, bool) {
	p, ok := KeyIdentity(item[pk])
	if !ok || sk == "" {
		return p, ok
	}
	s, ok := KeyIdentity(item[sk])
	return p + "\x00" + s, ok
}
