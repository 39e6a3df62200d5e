package statestore

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// keys is the item keys recorded for one row.
func (t *indexTx) keys(entity string, row []byte) []string {
	out := make([][]string, 1)
	t.keysOf(entity, [][]byte{row}, out)
	return out[0]
}

func TestIndexKeepsItemKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.index")
	ix, err := openIndex(path)
	require.NoError(t, err)
	defer ix.Close()
	row := []byte{byte(1), 1, '7'} // a source key as cdc encodes it
	keys := []string{"PK#1\x00SK#1", "PK#1\x00SK#1#PART#0001", "", "with\x00nul\x00s"}
	require.NoError(t, ix.update(func(tx *indexTx) error { return tx.set("e", row, keys) }))
	require.NoError(t, ix.view(func(tx *indexTx) error {
		require.Equal(t, keys, tx.keys("e", row))
		require.Empty(t, tx.keys("other", row))
		return nil
	}))
	// No keys removes the row.
	require.NoError(t, ix.update(func(tx *indexTx) error { return tx.set("e", row, nil) }))
	require.NoError(t, ix.view(func(tx *indexTx) error {
		require.Empty(t, tx.keys("e", row))
		return nil
	}))
	// A second process cannot open the same index.
	_, err = openIndex(path)
	require.ErrorContains(t, err, "locked by another process")
}

// keysOf reads many rows with one cursor, in any order: a row missing
// between two recorded ones, a row that is a prefix of a recorded one
// (the cursor lands on the longer key) and a row past the last read
// nothing, and the others their own keys.
func TestIndexReadsManyRowsWithOneCursor(t *testing.T) {
	ix, err := openIndex(filepath.Join(t.TempDir(), "x.index"))
	require.NoError(t, err)
	defer ix.Close()
	recorded := map[string][]string{"b": {"kb"}, "bb": {"kbb"}, "d": {"kd1", "kd2"}, "f": {"kf"}}
	require.NoError(t, ix.update(func(tx *indexTx) error {
		for row, keys := range recorded {
			if err := tx.set("e", []byte(row), keys); err != nil {
				return err
			}
		}
		return nil
	}))
	rows := []string{"f", "a", "b", "c", "bb", "d", "z", "b"}
	out := make([][]string, len(rows))
	raw := make([][]byte, len(rows))
	for i, r := range rows {
		raw[i] = []byte(r)
	}
	require.NoError(t, ix.view(func(tx *indexTx) error {
		tx.keysOf("e", raw, out)
		return nil
	}))
	for i, r := range rows {
		require.Equal(t, recorded[r], out[i], "row %q", r)
	}
	require.NoError(t, ix.view(func(tx *indexTx) error {
		none := make([][]string, 1)
		tx.keysOf("missing", raw[:1], none)
		require.Nil(t, none[0])
		return nil
	}))
}
