package statestore

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

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
