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
// form (ItemKey, KeyIdentity), so that it can be matched with built items.
// ok is false when a key attribute is missing or not of a key type.
// KeyAttributes is its inverse.
func (t *TableSchema) ItemKey(item map[string]types.AttributeValue) (key string, ok bool) {
	sk := ""
	if t.SK != nil {
		sk = t.SK.Name
	}
	return ItemKey(item, t.PK.Name, sk)
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
