package statestore

import (
	"fmt"
	"hash/maphash"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestGenKeepsEntriesExactly(t *testing.T) {
	g := newGen(maphash.MakeSeed())
	require.False(t, g.set("e", []byte("r1"), []string{"A", "B"}))
	require.False(t, g.set("e", []byte("r2"), nil))
	require.False(t, g.set("e\x00r", []byte("1"), []string{"OTHER"}))
	got, ok := g.get("e", []byte("r1"))
	require.True(t, ok)
	require.Equal(t, []string{"A", "B"}, got)
	got, ok = g.get("e", []byte("r2"))
	require.True(t, ok, "a row known to have no entry is held too")
	require.Nil(t, got)
	got, ok = g.get("e\x00r", []byte("1"))
	require.True(t, ok)
	require.Equal(t, []string{"OTHER"}, got)
	_, ok = g.get("e", []byte("r3"))
	require.False(t, ok)
	g.del("e", []byte("r1"))
	_, ok = g.get("e", []byte("r1"))
	require.False(t, ok)
	require.Equal(t, 2, g.len())
}

// A row whose hash another row holds is not taken for it, and setting it
// says the other row left.
func TestGenTellsRowsWithOneHashApart(t *testing.T) {
	g := newGen(maphash.MakeSeed())
	g.set("e", []byte("a"), []string{"A"})
	// Make row b's hash point at row a's entry, as a collision would.
	g.at[g.hash("e", []byte("b"))] = g.at[g.hash("e", []byte("a"))]
	_, ok := g.get("e", []byte("b"))
	require.False(t, ok, "row a's entry is not row b's")
	require.True(t, g.set("e", []byte("b"), []string{"B"}), "row a's slot is taken over")
	got, ok := g.get("e", []byte("b"))
	require.True(t, ok)
	require.Equal(t, []string{"B"}, got)
}

// Replaced entries leave dead bytes, which are given back once they
// outweigh the live ones.
func TestGenCompactsReplacedEntries(t *testing.T) {
	g := newGen(maphash.MakeSeed())
	for i := range 100 {
		g.set("e", []byte(fmt.Sprint(i)), []string{"K"})
	}
	for i := range 100_000 {
		g.set("e", []byte("hot"), []string{fmt.Sprint("KEY", i)})
	}
	require.Less(t, len(g.data), 4<<16, "the data stays within what compaction allows")
	got, _ := g.get("e", []byte("hot"))
	require.Equal(t, []string{"KEY99999"}, got)
	for i := range 100 {
		got, ok := g.get("e", []byte(fmt.Sprint(i)))
		require.True(t, ok)
		require.Equal(t, []string{"K"}, got)
	}
	g.drop(40)
	require.Equal(t, 61, g.len())
}
