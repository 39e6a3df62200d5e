package statestore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The local index lists a page of rows per read transaction and goes on
// after the last row of the page, also when fn deleted it meanwhile.
func TestFileListsOverSeveralPages(t *testing.T) {
	defer func(n int) { listPage = n }(listPage)
	listPage = 7
	ctx := context.Background()
	f, err := OpenFile(filepath.Join(t.TempDir(), "t.sync.json"))
	require.NoError(t, err)
	defer f.Close()
	var entries []Entry
	for i := range 50 {
		entries = append(entries, Entry{Entity: "e", Row: []byte(fmt.Sprintf("r%03d", i)), Keys: []string{fmt.Sprint(i)}})
	}
	require.NoError(t, f.SetKeys(ctx, entries))
	var got []string
	require.NoError(t, f.ListRows(ctx, "e", func(row []byte, keys []string) error {
		got = append(got, string(row)+"="+keys[0])
		return f.SetKeys(ctx, []Entry{{Entity: "e", Row: row}})
	}))
	require.Len(t, got, 50)
	for i, g := range got {
		require.Equal(t, fmt.Sprintf("r%03d=%d", i, i), g)
	}
	require.NoError(t, f.ListRows(ctx, "absent", func([]byte, []string) error { t.Fatal("no rows"); return nil }))
}
