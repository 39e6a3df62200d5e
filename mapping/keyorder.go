package mapping

import (
	"bytes"
	"math/big"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// CompareKey orders two key values as DynamoDB orders sort keys: numbers
// by value, strings and binary by their bytes. A missing value sorts
// first; values of different types by their key text.
func CompareKey(a, b types.AttributeValue) int {
	switch x := a.(type) {
	case *types.AttributeValueMemberN:
		if y, ok := b.(*types.AttributeValueMemberN); ok {
			fx, _, errx := big.ParseFloat(x.Value, 10, 256, big.ToNearestEven)
			fy, _, erry := big.ParseFloat(y.Value, 10, 256, big.ToNearestEven)
			if errx == nil && erry == nil {
				return fx.Cmp(fy)
			}
		}
	case *types.AttributeValueMemberB:
		if y, ok := b.(*types.AttributeValueMemberB); ok {
			return bytes.Compare(x.Value, y.Value)
		}
	}
	sa, sb := KeyText(a), KeyText(b)
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	case sa < sb:
		return -1
	case sa > sb:
		return 1
	}
	return 0
}
