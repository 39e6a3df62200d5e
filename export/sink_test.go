package export

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink/sinktest"
)

type acks struct{ keys []string }

func (a *acks) Acked(items []*mapping.Item) {
	for _, it := range items {
		a.keys = append(a.keys, it.Key)
	}
}
func (a *acks) Rejected(*mapping.Item, error) {}
func (a *acks) Retried([]*mapping.Item, bool) {}

// origin stands for the pipeline's row: not yet behind the checkpoint.
type origin struct{ passed bool }

func (o *origin) Checkpointed() bool { return o.passed }

// An item that is durable in a file, but whose row the checkpoint is not
// past, is saved as unsettled; a resumed sink acknowledges it again
// without writing it a second time.
func TestUnsettledItemsAreNotWrittenTwice(t *testing.T) {
	root := t.TempDir()
	d, err := NewDir(root)
	require.NoError(t, err)
	batch := sinktest.Batch("row", 3)
	row := &origin{}
	for _, it := range batch {
		it.Origin = row
	}
	first := New(d, nil, Options{Lanes: 1, Prefix: "a"})
	a := &acks{}
	require.NoError(t, first.Write(context.Background(), batch[:2], a)) // the row's third item is not written yet
	require.NoError(t, first.Flush(context.Background()))
	require.Len(t, a.keys, 2)
	state, release := first.Snapshot()
	release()
	var st State
	require.NoError(t, json.Unmarshal(state, &st))
	require.Len(t, st.Files, 1)
	require.ElementsMatch(t, []string{batch[0].Key, batch[1].Key}, st.Unsettled)

	// The run is killed; the resumed one builds the row's three items again.
	again := sinktest.Batch("row", 3)
	second := New(d, &st, Options{Lanes: 1, Prefix: "b"})
	b := &acks{}
	require.NoError(t, second.Write(context.Background(), again, b))
	require.Equal(t, []string{again[0].Key, again[1].Key}, b.keys, "the durable ones are acknowledged at once")
	require.NoError(t, second.Flush(context.Background()))
	require.Len(t, b.keys, 3)
	got := durableItems(t, root)
	require.Len(t, got, 3)
	for k, n := range got {
		require.Equal(t, 1, n, k)
	}

	// Once the row is behind the checkpoint, it is no longer unsettled.
	row.passed = true
	state, release = first.Snapshot()
	release()
	var later State
	require.NoError(t, json.Unmarshal(state, &later))
	require.Empty(t, later.Unsettled)
}

// Lines go into a file shuffled in blocks: every item once, but not in the
// order they were written (2,000 items in key order would come out in
// that order with probability 1/2000!).
func TestLinesAreShuffledInBlocks(t *testing.T) {
	root := t.TempDir()
	d, err := NewDir(root)
	require.NoError(t, err)
	batch := sinktest.Batch("pk", 2000)
	var want []string
	for _, it := range batch {
		want = append(want, it.Key)
	}
	s := New(d, nil, Options{Lanes: 1, Prefix: "a", ShuffleBytes: 16 << 10})
	for i := 0; i < len(batch); i += 25 {
		require.NoError(t, s.Write(context.Background(), batch[i:i+25], &acks{}))
	}
	require.NoError(t, s.Flush(context.Background()))
	require.Len(t, s.Files(), 1)

	f, err := os.Open(filepath.Join(root, DataDir, s.Files()[0].Name))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	var got []string
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		var line struct{ Item map[string]map[string]string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		got = append(got, line.Item["PK"]["S"]+"\x00"+line.Item["SK"]["S"])
	}
	require.NoError(t, sc.Err())
	require.ElementsMatch(t, want, got)
	require.NotEqual(t, want, got, "lines are written in a shuffled order")
	// Blocks of 16 KiB: the first items of the file all come from the
	// first block, so the shuffle is local, not a sort.
	require.Less(t, slices.Index(want, got[0]), len(want)/2)
}
