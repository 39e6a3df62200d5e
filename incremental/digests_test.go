package incremental

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDigestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "T.incremental.digests")
	d, err := OpenDigests(path, "fp")
	require.NoError(t, err)
	require.Nil(t, d, "no file: no digests")

	w, err := CreateDigests(path, "fp")
	require.NoError(t, err)
	require.NoError(t, w.Add([]byte("1\x00\x01"), 7))
	require.NoError(t, w.Add([]byte("2\x00\x01"), 1<<63))
	require.NoFileExists(t, path, "nothing replaces the file before Commit")
	require.NoError(t, w.Commit())
	w.Abort() // after Commit: a no-op

	d, err = OpenDigests(path, "fp")
	require.NoError(t, err)
	var pks []string
	var sums []uint64
	for {
		pk, sum, ok, err := d.Next()
		require.NoError(t, err)
		if !ok {
			break
		}
		pks, sums = append(pks, string(pk)), append(sums, sum)
	}
	require.NoError(t, d.Close())
	require.Equal(t, []string{"1\x00\x01", "2\x00\x01"}, pks)
	require.Equal(t, []uint64{7, 1 << 63}, sums)

	d, err = OpenDigests(path, "another mapping")
	require.NoError(t, err)
	require.Nil(t, d, "digests of another mapping are not used")

	// An aborted writer leaves the old file.
	w, err = CreateDigests(path, "fp")
	require.NoError(t, err)
	require.NoError(t, w.Add([]byte("3\x00\x01"), 3))
	w.Abort()
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1)

	// A truncated file is refused, not read as a shorter one.
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b[:len(b)-12], 0o644))
	d, err = OpenDigests(path, "fp")
	require.NoError(t, err)
	_, _, _, err = d.Next()
	require.NoError(t, err)
	_, _, _, err = d.Next()
	require.Error(t, err)
	d.Close()

	require.NoError(t, DiscardDigests(path))
	require.NoFileExists(t, path)
	require.NoError(t, DiscardDigests(path), "discarding no file is fine")
}
