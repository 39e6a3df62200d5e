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

func TestItemKeyText(t *testing.T) {
	bin := &EntityPlan{table: &TableSchema{PK: KeyAttr{Name: "PK", Type: TypeS}, SK: &KeyAttr{Name: "SK", Type: TypeB}}}
	it := &Item{Key: "tenant\x00" + "\x00\xffa", PKLen: 6, Entity: bin}
	require.Equal(t, `(PK "tenant", SK "AP9h")`, it.KeyText()) // binary in base64, as every report shows it

	pkOnly := &EntityPlan{table: &TableSchema{PK: KeyAttr{Name: "PK", Type: TypeN}}}
	require.Equal(t, `(PK "12")`, (&Item{Key: "12", PKLen: 2, Entity: pkOnly}).KeyText())

	// Without an entity (hand-made items): the key as it is held.
	require.Equal(t, `("a", "b")`, (&Item{Key: "a\x00b", PKLen: 1}).KeyText())
}

func TestKeyIdentity(t *testing.T) {
	for _, tc := range []struct {
		av   types.AttributeValue
		want string
		ok   bool
	}{
		{&types.AttributeValueMemberS{Value: "PORTFOLIO#7"}, "PORTFOLIO#7", true},
		{&types.AttributeValueMemberN{Value: "-12.50"}, "-12.5", true}, // canonical: one key to DynamoDB
		{&types.AttributeValueMemberB{Value: []byte{0x00, 0xff, 'a'}}, "\x00\xffa", true},
		{&types.AttributeValueMemberBOOL{Value: true}, "", false},
		{nil, "", false},
	} {
		got, ok := KeyIdentity(tc.av)
		require.Equal(t, tc.want, got)
		require.Equal(t, tc.ok, ok)
	}
	item := map[string]types.AttributeValue{"PK": &types.AttributeValueMemberS{Value: "a"}, "SK": &types.AttributeValueMemberN{Value: "1.0"}}
	k, ok := ItemKey(item, "PK", "SK")
	require.True(t, ok)
	require.Equal(t, "a\x001", k)
	_, ok = ItemKey(item, "PK", "missing")
	require.False(t, ok)
}

func TestKeyTextOfAPartitionKeyWithANulByte(t *testing.T) {
	tbl := &TableSchema{PK: KeyAttr{Name: "PK", Type: TypeB}, SK: &KeyAttr{Name: "SK", Type: TypeS}}
	require.Equal(t, `(PK "AP9h", SK "x")`, tbl.KeyTextOf("\x00\xffa\x00x", 3))
}
