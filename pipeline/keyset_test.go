package pipeline

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
)

// The filter is sized from the estimate, between 64 KiB and 64 MiB for
// its first part.
func TestKeySetSizedFromEstimate(t *testing.T) {
	for _, c := range []struct {
		keys  int64
		bytes int
	}{
		{0, minFilterBytes},
		{40, minFilterBytes},
		{1_000_000, 8_000_000 / 64 * 64},
		{-1, 8 << 20}, // unknown: a million keys' worth
		{100_000_000, maxFilterBytes},
	} {
		require.Equal(t, c.bytes, keySetFor(c.keys).bytes(), "%d keys", c.keys)
	}
}

// At the smallest size (8,192 keys), 100,000 keys make the filter grow
// three times, and a key added again is caught whichever part holds it,
// while new keys are rarely mistaken for seen ones.
func TestKeySetCatchesDuplicatesAcrossGrowth(t *testing.T) {
	s := keySetFor(1)
	key := func(i int) string { return fmt.Sprintf("%d\x00DATABASE#db%dn%d", i/10, i, i%10) }
	const n = 100_000
	fp := 0
	for i := 0; i < n; i++ {
		if s.testAndAdd(key(i)) {
			fp++
		}
	}
	require.Len(t, *s.filters.Load(), 4, "parts of 8,192, 16,384, 32,768 and 65,536 keys")
	require.Less(t, fp, 3, "false alarms among %d new keys", n)
	for i := 0; i < n; i += 997 {
		require.True(t, s.testAndAdd(key(i)), "key %d added again", i)
	}
}

// Many goroutines add the same keys at once while the smallest filter
// grows under them: exactly one of them may be told a key is new.
func TestKeySetConcurrentSameKeyWhileGrowing(t *testing.T) {
	s := keySetFor(1)
	const keys, adders = 30_000, 4
	var newCount [keys]atomic.Int32
	var wg sync.WaitGroup
	for a := 0; a < adders; a++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := make([]bool, 64)
			batch := make([]string, 0, 64)
			for k := 0; k < keys; k++ {
				batch = append(batch, fmt.Sprintf("1\x00SERVER#%d", (k*7+a*64)%keys))
				if len(batch) == cap(batch) || k == keys-1 {
					s.testAndAddAll(batch, seen[:len(batch)])
					for i, b := range batch {
						if !seen[i] {
							var id int
							fmt.Sscanf(b[len("1\x00SERVER#"):], "%d", &id)
							newCount[id].Add(1)
						}
					}
					batch = batch[:0]
				}
			}
		}()
	}
	wg.Wait()
	require.Greater(t, len(*s.filters.Load()), 2, "the filter grew while the keys were added")
	for k := range newCount {
		require.EqualValues(t, 1, newCount[k].Load(), "key %d reported new %d times", k, newCount[k].Load())
	}
}

// A run whose estimate is far too low (10 rows for 20,000) starts with the
// smallest filter (8,192 keys), which grows; the one duplicate key, between the
// first rows and the last, is still caught and names both rows.
func TestRunCatchesDuplicateAfterTheFilterGrew(t *testing.T) {
	p := thingsPlan(t)
	const rows = 20_000
	snap := &fakeSnapshot{n: rows, estimate: 10, group: func(id int64) int64 {
		if id == rows-1 {
			return 3 // the same key as row 3
		}
		return id
	}}
	_, err := Run(context.Background(), job(p, snap, newFakeSink(1), checkpoint.NewMemoryStore()), Options{Readers: 2, Writers: 2})
	var rerr *mapping.RowError
	require.ErrorAs(t, err, &rerr)
	require.Regexp(t, `row id=(3|19999): key collision: item key \(PK "G", SK "T#3"\) is also produced by entity thing, row id=(3|19999)`, err.Error())
}
