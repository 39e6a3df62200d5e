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
