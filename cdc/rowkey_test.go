package cdc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/value"
)

func TestRowKeysAreDistinct(t *testing.T) {
	keys := [][]value.Value{
		{value.IntValue(1)},
		{value.StringValue("1")},
		{value.StringValue("ab"), value.StringValue("c")},
		{value.StringValue("a"), value.StringValue("bc")},
		{value.StringValue("a\x00b")},
		{value.StringValue("a"), value.StringValue("b")},
		{value.BytesValue([]byte("1"))},
	}
	seen := map[string]int{}
	for i, k := range keys {
		enc := string(rowKey(k))
		if j, dup := seen[enc]; dup {
			t.Fatalf("keys %d and %d encode alike: %v, %v", j, i, keys[j], k)
		}
		seen[enc] = i
		require.Equal(t, enc, string(rowKey(k)), "the encoding is deterministic")
	}
}

func TestPickNeedsEveryColumn(t *testing.T) {
	img := map[string]value.Value{"id": value.IntValue(1), "parent": value.NullValue()}
	got, ok := pick(img, []string{"id"})
	require.True(t, ok)
	require.Equal(t, []value.Value{value.IntValue(1)}, got)
	_, ok = pick(img, []string{"id", "parent"}) // NULL: references nothing
	require.False(t, ok)
	_, ok = pick(img, []string{"missing"}) // a key-only before-image
	require.False(t, ok)
	_, ok = pick(nil, []string{"id"})
	require.False(t, ok)
}
