package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

func twoShards() ([]source.Range, error) {
	mid := value.IntValue(100)
	return []source.Range{{Hi: &mid}, {Lo: &mid}}, nil
}

func TestFileStoreResumesPositionsAndRanges(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ck.json")
	meta := Meta{Fingerprint: "f1", Table: "t", Source: "postgres://h/db"}

	s := NewFileStore(path)
	resumed, err := s.Open(ctx, meta, false)
	require.NoError(t, err)
	require.False(t, resumed)
	shards, err := s.Plan(ctx, "server", twoShards)
	require.NoError(t, err)
	require.Len(t, shards, 2)
	a, ok, err := s.Claim(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	s.Advance(a, []value.Value{value.StringValue("k42")}, 42, 84, 1)
	require.NoError(t, s.Flush(ctx))

	// A new process resumes: same ranges, the claimed shard is pending
	// again with its position, counters kept.
	s2 := NewFileStore(path)
	resumed, err = s2.Open(ctx, meta, false)
	require.NoError(t, err)
	require.True(t, resumed)
	shards2, err := s2.Plan(ctx, "server", func() ([]source.Range, error) {
		t.Fatal("a resumed run must keep its saved ranges")
		return nil, nil
	})
	require.NoError(t, err)
	require.Equal(t, Pending, shards2[0].Status)
	require.Equal(t, "k42", shards2[0].After[0].S)
	require.EqualValues(t, 42, shards2[0].Rows)
	require.EqualValues(t, 84, shards2[0].Items)
	require.EqualValues(t, 100, shards2[1].Range.Lo.I)

	// A finished run is not resumed: the next run starts fresh.
	for {
		sh, ok, err := s2.Claim(ctx)
		require.NoError(t, err)
		if !ok {
			break
		}
		s2.Done(sh)
	}
	require.NoError(t, s2.Finish(ctx))
	resumed, err = NewFileStore(path).Open(ctx, meta, false)
	require.NoError(t, err)
	require.False(t, resumed)
}

func TestFileStoreRefusesAChangedMapping(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ck.json")
	s := NewFileStore(path)
	_, err := s.Open(ctx, Meta{Fingerprint: "old"}, false)
	require.NoError(t, err)
	_, err = s.Plan(ctx, "e", twoShards)
	require.NoError(t, err)
	require.NoError(t, s.Flush(ctx))

	_, err = NewFileStore(path).Open(ctx, Meta{Fingerprint: "new"}, false)
	require.ErrorIs(t, err, ErrMismatch)
	require.Contains(t, err.Error(), "use --restart to discard it and start over, or --force")

	forced := NewFileStore(path)
	resumed, err := forced.Open(ctx, Meta{Fingerprint: "new"}, true)
	require.NoError(t, err)
	require.True(t, resumed)

	require.NoError(t, NewFileStore(path).Discard(ctx))
	_, err = os.Stat(path)
	require.True(t, os.IsNotExist(err))
}

func TestFileStoreWritesAtomically(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "ck.json")
	s := NewFileStore(path)
	_, err := s.Open(ctx, Meta{Fingerprint: "f"}, false)
	require.NoError(t, err)
	require.NoError(t, s.Flush(ctx))
	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o644))
	_, err = NewFileStore(path).Open(ctx, Meta{Fingerprint: "f"}, false)
	require.ErrorContains(t, err, "is corrupt")
	require.NoError(t, s.Flush(ctx))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary files are left behind")
	_, err = NewFileStore(path).Open(ctx, Meta{Fingerprint: "f"}, false)
	require.NoError(t, err)
}
