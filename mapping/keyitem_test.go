package mapping

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
)

// ItemKey reads back what KeyAttributes wrote: binary raw, not base64, and
// a number in the canonical form Item.Key holds, however it was written.
func TestItemKey(t *testing.T) {
	bin := &TableSchema{PK: KeyAttr{Name: "PK", Type: TypeN}, SK: &KeyAttr{Name: "SK", Type: TypeB}}
	it := &Item{Key: "12\x00" + "\x00\xffa", PKLen: 2}
	key, ok := bin.ItemKey(bin.KeyAttributes(it))
	require.True(t, ok)
	require.Equal(t, it.Key, key)

	key, ok = bin.ItemKey(map[string]types.AttributeValue{"PK": &types.AttributeValueMemberN{Value: "12.0"}, "SK": &types.AttributeValueMemberB{Value: []byte("x")}})
	require.True(t, ok)
	require.Equal(t, "12\x00x", key)

	_, ok = bin.ItemKey(map[string]types.AttributeValue{"PK": &types.AttributeValueMemberN{Value: "12"}})
	require.False(t, ok, "a missing sort key")
}
