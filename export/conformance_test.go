package export

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/sink/sinktest"
)

// durableItems reads the items of the committed files of a directory
// destination (spools are not durable).
func durableItems(t *testing.T, root string) map[string]int {
	out := map[string]int{}
	ents, err := os.ReadDir(filepath.Join(root, DataDir))
	require.NoError(t, err)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		f, err := os.Open(filepath.Join(root, DataDir, e.Name()))
		require.NoError(t, err)
		zr, err := gzip.NewReader(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(zr)
		for sc.Scan() {
			var line struct {
				Item map[string]map[string]string
			}
			require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
			out[line.Item["PK"]["S"]+"\x00"+line.Item["SK"]["S"]]++
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	return out
}

func TestExportSinkConformance(t *testing.T) {
	for _, size := range []int64{1 << 20, 2 << 10} { // files cut by Flush only, and by size too
		sinktest.Run(t, func(t *testing.T) sinktest.Subject {
			root := t.TempDir()
			d, err := NewDir(root)
			require.NoError(t, err)
			s := New(d, nil, Options{Lanes: 3, FileBytes: size, Prefix: "t"})
			return sinktest.Subject{Sink: s, Durable: func() map[string]int { return durableItems(t, root) }}
		})
	}
}
