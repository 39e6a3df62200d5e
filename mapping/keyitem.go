package mapping

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DeleteItem makes the delete request for an item key in Item.Key's text
// form (partition key, NUL, sort key), typed by the table's key schema.
// Live sync uses it for keys a row no longer produces.
func (t *TableSchema) DeleteItem(key string) *Item {
	pk, sk, _ := strings.Cut(key, "\x00")
	attrs := map[string]types.AttributeValue{t.PK.Name: keyAttr(pk, t.PK.Type)}
	if t.SK != nil {
		attrs[t.SK.Name] = keyAttr(sk, t.SK.Type)
	}
	return &Item{Attrs: attrs, Key: key, PKLen: len(pk), Size: len(key), Delete: true}
}

// KeyAttributes returns an item's primary key as attribute values, made
// from Item.Key and typed by the table's key schema: what a delete or a
// lookup of the item needs, whichever form its attributes are in.
func (t *TableSchema) KeyAttributes(it *Item) map[string]types.AttributeValue {
	attrs := map[string]types.AttributeValue{t.PK.Name: t.PartitionKeyAttr(it.PartitionKey())}
	if t.SK != nil {
		attrs[t.SK.Name] = keyAttr(it.Key[min(it.PKLen+1, len(it.Key)):], t.SK.Type)
	}
	return attrs
}

// PartitionKeyAttr returns the partition key in Item.Key's text form as
// its attribute value.
func (t *TableSchema) PartitionKeyAttr(text string) types.AttributeValue {
	return keyAttr(text, t.PK.Type)
}

// ItemKey returns the key of an item read from the table in Item.Key's
// text form, so that it can be matched with built items: numbers in
// canonical form, binary as raw bytes. ok is false when a key attribute is
// missing or not of a key type. KeyAttributes is its inverse.
func (t *TableSchema) ItemKey(item map[string]types.AttributeValue) (key string, ok bool) {
	key, ok = keyPartText(item[t.PK.Name])
	if !ok || t.SK == nil {
		return key, ok
	}
	sk, ok := keyPartText(item[t.SK.Name])
	return key + "\x00" + sk, ok
}

// keyPartText is one key attribute in Item.Key's text form.
func keyPartText(av types.AttributeValue) (string, bool) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return v.Value, true
	case *types.AttributeValueMemberN:
		if n, err := NormalizeNumber(v.Value); err == nil {
			return n, true
		}
		return v.Value, true
	case *types.AttributeValueMemberB:
		return string(v.Value), true
	}
	return "", false
}

func keyAttr(text string, typ AttrType) types.AttributeValue {
	switch typ {
	case TypeN:
		return &types.AttributeValueMemberN{Value: text}
	case TypeB:
		return &types.AttributeValueMemberB{Value: []byte(text)}
	}
	return &types.AttributeValueMemberS{Value: text}
}
