package verify

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func drain(t *testing.T, src recordSource) [][]byte {
	t.Helper()
	var out [][]byte
	for {
		rec, ok, err := src.next()
		require.NoError(t, err)
		if !ok {
			return out
		}
		out = append(out, rec)
	}
}

func TestSorter(t *testing.T) {
	tests := []struct {
		name    string
		records int
		budget  int
		// runs is how many run files exist before iterating.
		runs int
	}{
		{"in memory", 1000, 1 << 20, 0},
		{"a few runs", 1000, 4000, 1},
		{"more runs than one merge takes", 5000, 1000, maxFanIn + 1},
		{"empty", 0, 1000, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := newSorter(dir, "test", tt.budget)
			r := rand.New(rand.NewPCG(3, 4))
			var want [][]byte
			var mu sync.Mutex
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine [][]byte
					for i := w; i < tt.records; i += 4 {
						mu.Lock()
						rec := []byte(fmt.Sprintf("%08d-%d", r.IntN(tt.records/2+1), i%3))
						mu.Unlock()
						mine = append(mine, rec)
						if len(mine) == 10 {
							mu.Lock()
							for _, m := range mine {
								want = append(want, bytes.Clone(m))
							}
							mu.Unlock()
							require.NoError(t, s.add(mine))
							mine = nil
						}
					}
					mu.Lock()
					for _, m := range mine {
						want = append(want, bytes.Clone(m))
					}
					mu.Unlock()
					require.NoError(t, s.add(mine))
				}()
			}
			wg.Wait()
			require.GreaterOrEqual(t, len(s.runs), tt.runs)
			src, err := s.iterate()
			require.NoError(t, err)
			got := drain(t, src)
			slices.SortFunc(want, bytes.Compare)
			require.Equal(t, len(want), len(got))
			for i := range want {
				require.Equal(t, string(want[i]), string(got[i]), "record %d", i)
			}
			s.close()
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, left, "run files are removed")
		})
	}
}

// distinct passes each record of a sorted source once and counts the
// repeats, which every sweep reports as duplicate keys.
func TestDistinctCountsRepeats(t *testing.T) {
	var dupes atomic.Int64
	src := &memSource{recs: [][]byte{[]byte("a"), []byte("a"), []byte("b"), []byte("c"), []byte("c"), []byte("c")}}
	got := drain(t, &distinct{src: src, dupes: &dupes})
	require.Equal(t, [][]byte{[]byte("a"), []byte("b"), []byte("c")}, got)
	require.EqualValues(t, 3, dupes.Load())
}
