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

func keyAttr(text string, typ AttrType) types.AttributeValue {
	switch typ {
	case TypeN:
		return &types.AttributeValueMemberN{Value: text}
	case TypeB:
		return &types.AttributeValueMemberB{Value: []byte(text)}
	}
	return &types.AttributeValueMemberS{Value: text}
}
