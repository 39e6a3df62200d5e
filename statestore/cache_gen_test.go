package statestore

import (
	"fmt"
	"hash/maphash"
	"testing"

	"github.com/stretchr/testify/require"
)

// testSeed and ref make the rows of the generations under test.
var testSeed = maphash.MakeSeed()

func ref(entity, row string) rowRef { return newRowRef(testSeed, entity, []byte(row)) }

func TestGenKeepsEntriesExactly(t *testing.T) {
	g := newGen()
	require.False(t, g.set(ref("e", "r1"), []string{"A", "B"}))
	require.False(t, g.set(ref("e", "r2"), nil))
	require.False(t, g.set(ref("e\x00r", "1"), []string{"OTHER"}))
	got, ok := g.get(ref("e", "r1"))
	require.True(t, ok)
	require.Equal(t, []string{"A", "B"}, got)
	got, ok = g.get(ref("e", "r2"))
	require.True(t, ok, "a row known to have no entry is held too")
	require.Nil(t, got)
	got, ok = g.get(ref("e\x00r", "1"))
	require.True(t, ok)
	require.Equal(t, []string{"OTHER"}, got)
	_, ok = g.get(ref("e", "r3"))
	require.False(t, ok)
	g.del(ref("e", "r1"))
	_, ok = g.get(ref("e", "r1"))
	require.False(t, ok)
	require.Equal(t, 2, g.len())
}

// A row whose hash another row holds is not taken for it, and setting it
// says the other row left.
func TestGenTellsRowsWithOneHashApart(t *testing.T) {
	g := newGen()
	g.set(ref("e", "a"), []string{"A"})
	// Make row b's hash point at row a's entry, as a collision would.
	g.at[ref("e", "b").h] = g.at[ref("e", "a").h]
	_, ok := g.get(ref("e", "b"))
	require.False(t, ok, "row a's entry is not row b's")
	require.True(t, g.set(ref("e", "b"), []string{"B"}), "row a's slot is taken over")
	got, ok := g.get(ref("e", "b"))
	require.True(t, ok)
	require.Equal(t, []string{"B"}, got)
}

// Replaced entries leave dead bytes, which are given back once they
// outweigh the live ones.
func TestGenCompactsReplacedEntries(t *testing.T) {
	g := newGen()
	for i := range 100 {
		g.set(ref("e", fmt.Sprint(i)), []string{"K"})
	}
	for i := range 100_000 {
		g.set(ref("e", "hot"), []string{fmt.Sprint("KEY", i)})
	}
	require.Less(t, len(g.data), 4<<16, "the data stays within what compaction allows")
	got, _ := g.get(ref("e", "hot"))
	require.Equal(t, []string{"KEY99999"}, got)
	for i := range 100 {
		got, ok := g.get(ref("e", fmt.Sprint(i)))
		require.True(t, ok)
		require.Equal(t, []string{"K"}, got)
	}
	g.drop(40)
	require.Equal(t, 61, g.len())
}
