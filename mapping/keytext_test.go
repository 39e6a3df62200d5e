package mapping

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

func TestKeyText(t *testing.T) {
	for _, tc := range []struct {
		av   types.AttributeValue
		want string
	}{
		{&types.AttributeValueMemberS{Value: "PORTFOLIO#7"}, "PORTFOLIO#7"},
		{&types.AttributeValueMemberN{Value: "-12.50"}, "-12.50"},
		{&types.AttributeValueMemberB{Value: []byte{0x00, 0xff, 'a'}}, "AP9h"}, // base64, as DynamoDB's JSON
		{nil, ""},
	} {
		require.Equal(t, tc.want, KeyText(tc.av))
	}
}
