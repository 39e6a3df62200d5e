package pipeline

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
)

func testItem(pk, sk string) *mapping.Item {
	return &mapping.Item{Key: pk + "\x00" + sk, PKLen: len(pk)}
}

// Items arrive one collection after another, as rows read in key order
// produce them. The batcher must spread consecutive batches over many
// partition keys instead of writing one collection at a time.
func TestInterleaveSpreadsPartitionKeys(t *testing.T) {
	const collections, perCollection = 200, 50
	// Every item waits in the channel before the batcher starts: with a
	// producer racing it, a loaded machine let the batcher run ahead of
	// the rows and emit from a window of a few collections (a flake of
	// the CI tier under -race, not of the batcher).
	in := make(chan []*mapping.Item, collections*perCollection)
	out := make(chan []*mapping.Item, 1000)
	for c := 0; c < collections; c++ {
		for i := 0; i < perCollection; i++ {
			in <- []*mapping.Item{testItem(fmt.Sprintf("P%03d", c), fmt.Sprintf("S%03d", i))}
		}
	}
	close(in)
	require.NoError(t, interleave(context.Background(), in, out, 16384, nil))
	close(out)
	var batches [][]*mapping.Item
	total := 0
	for b := range out {
		batches = append(batches, b)
		total += len(b)
	}
	require.Equal(t, collections*perCollection, total, "every item is batched exactly once")
	seen := map[string]bool{}
	full := 0
	for i, b := range batches {
		require.LessOrEqual(t, len(b), 25)
		keys := map[string]bool{}
		pks := map[string]bool{}
		for _, it := range b {
			require.False(t, seen[it.Key], "item %q batched twice", it.Key)
			seen[it.Key] = true
			keys[it.Key] = true
			pks[it.PartitionKey()] = true
		}
		require.Len(t, keys, len(b), "batch %d repeats a key", i)
		// Steady state: with a full window every batch holds 25 different
		// partition keys (the tail may hold fewer).
		if i < len(batches)-10 && len(b) == 25 {
			require.Len(t, pks, 25, "batch %d has %d partition keys", i, len(pks))
			full++
		}
	}
	require.Greater(t, full, len(batches)/2)
	// Written in source order, 2 consecutive batches would cover 1 collection;
	// interleaved, 4 consecutive batches cover ~100 collections.
	window := map[string]bool{}
	for _, b := range batches[10:14] {
		for _, it := range b {
			window[it.PartitionKey()] = true
		}
	}
	require.GreaterOrEqual(t, len(window), 80)
}

func TestInterleaveFewKeysStillFillsBatches(t *testing.T) {
	in := make(chan []*mapping.Item, 100)
	out := make(chan []*mapping.Item, 100)
	for i := 0; i < 60; i++ {
		in <- []*mapping.Item{testItem("ONLY", fmt.Sprint(i))}
	}
	close(in)
	require.NoError(t, interleave(context.Background(), in, out, 2048, nil))
	close(out)
	var sizes []int
	for b := range out {
		sizes = append(sizes, len(b))
	}
	require.Equal(t, []int{25, 25, 10}, sizes)
}
