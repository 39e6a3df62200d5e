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

// A slice's keys are read in the order of their encodings: integers in
// numeric order, texts of one length in their text's order, so that an IN
// list reads neighbouring rows.
func TestOrderedKeepsNeighboursTogether(t *testing.T) {
	ints := affected{}
	for _, n := range []int64{100, 9, 2, 10, 11} {
		ints.add(nil, []value.Value{{Kind: value.Int, I: n}})
	}
	var got []int64
	for _, k := range ordered(ints[nil]) {
		got = append(got, k.key[0].I)
		require.Equal(t, string(rowKey(k.key)), k.encoded, "each row keeps its own encoding")
	}
	require.Equal(t, []int64{2, 9, 10, 11, 100}, got)

	texts := affected{}
	for _, s := range []string{"Db7n2d1", "Db3n1d2", "Db3n1d1", "Db7n1d1"} {
		texts.add(nil, []value.Value{{Kind: value.String, S: s}})
	}
	var names []string
	for _, k := range ordered(texts[nil]) {
		names = append(names, k.key[0].S)
	}
	require.Equal(t, []string{"Db3n1d1", "Db3n1d2", "Db7n1d1", "Db7n2d1"}, names)

	// Encodings that share their first eight bytes (the prefix compared
	// as one integer) are ordered by the rest of their text.
	long := affected{}
	for _, s := range []string{"database-0010", "database-0002", "database-0001", "databasf", "database"} {
		long.add(nil, []value.Value{value.StringValue(s)})
	}
	names = nil
	for _, k := range ordered(long[nil]) {
		names = append(names, k.key[0].S)
	}
	require.Equal(t, []string{"database", "databasf", "database-0001", "database-0002", "database-0010"}, names)
}
