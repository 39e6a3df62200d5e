package mapping

import (
	"encoding/base64"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// KeyText is a key attribute's value as every report and error message
// shows it: a string or a number as itself, binary in base64 as DynamoDB's
// JSON and the AWS CLI show it, a missing value as "". It is for people:
// an item's identity is Item.Key, whose binary is raw.
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

// KeyText is the item's key as error messages show it, ("pk") or ("pk",
// "sk"), each part rendered by KeyText: the same text as every report,
// binary in base64, where Item.Key holds binary raw.
func (it *Item) KeyText() string {
	var pk, sk string
	hasSK := len(it.Key) > it.PKLen
	if it.Entity != nil && it.Entity.table != nil {
		t := it.Entity.table
		attrs := t.KeyAttributes(it)
		pk = KeyText(attrs[t.PK.Name])
		if hasSK = t.SK != nil; hasSK {
			sk = KeyText(attrs[t.SK.Name])
		}
	} else {
		pk = it.PartitionKey()
		if hasSK {
			sk = it.Key[it.PKLen+1:]
		}
	}
	if !hasSK {
		return fmt.Sprintf("(%q)", pk)
	}
	return fmt.Sprintf("(%q, %q)", pk, sk)
}
