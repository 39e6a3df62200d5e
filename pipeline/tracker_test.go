package pipeline

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/source"
	"github.com/dynafold/dynafold/value"
)

// The checkpoint position may only pass a row once that row and every
// earlier row of the shard have all their items acknowledged, whatever
// order the acknowledgements arrive in.
func TestTrackerMovesOnlyPastFullyAcknowledgedRows(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		store := checkpoint.NewMemoryStore()
		_, err := store.Open(t.Context(), checkpoint.Meta{}, false)
		require.NoError(t, err)
		shards, err := store.Plan(t.Context(), "e", func() ([]source.Range, error) { return []source.Range{source.Full}, nil })
		require.NoError(t, err)
		tr := newTracker(shards[0], store, nil)
		er := &entityRun{stats: newEntityStats()}

		const rows = 200
		type pend struct{ row, item int }
		var tickets []*ticket
		var acks []pend
		itemsOf := make([]int, rows)
		for r := 0; r < rows; r++ {
			tk := tr.add(er, value.Row{value.IntValue(int64(r))}, nil, 1, 0)
			n := rng.IntN(4) // rows with 0 items complete as soon as built
			itemsOf[r] = n
			tk.items = int32(n)
			tk.pending.Add(int32(n))
			tickets = append(tickets, tk)
			for i := 0; i < n; i++ {
				acks = append(acks, pend{r, i})
			}
		}
		tr.finishRead()
		// Builders release their holds, then acks arrive in random order.
		for _, tk := range tickets {
			tk.release()
		}
		rng.Shuffle(len(acks), func(i, j int) { acks[i], acks[j] = acks[j], acks[i] })
		acked := make([]int, rows)
		for _, a := range acks {
			tickets[a.row].release()
			acked[a.row]++
			s := store.Shards()[0]
			if s.After == nil {
				continue
			}
			pos := int(s.After[0].I)
			for r := 0; r <= pos; r++ {
				require.Equal(t, itemsOf[r], acked[r], "seed %d: position %d passed row %d before its items were acknowledged", seed, pos, r)
			}
			require.EqualValues(t, pos+1, s.Rows)
		}
		s := store.Shards()[0]
		require.Equal(t, checkpoint.Done, s.Status)
		require.EqualValues(t, rows, s.Rows)
		require.EqualValues(t, rows-1, s.After[0].I)
		select {
		case <-tr.done:
		default:
			t.Fatal("tracker not done")
		}
	}
}

// Many goroutines add the same keys at once: exactly one of them may be
// told a key is new.
func TestKeySetConcurrentSameKey(t *testing.T) {
	s := newKeySet(1 << 20)
	const keys, adders = 200, 8
	var newCount [keys]atomic.Int32
	var wg sync.WaitGroup
	for a := 0; a < adders; a++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < keys; k++ {
				if !s.testAndAdd(fmt.Sprintf("1\x00SERVER#%d", k)) {
					newCount[k].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	for k := range newCount {
		require.EqualValues(t, 1, newCount[k].Load(), "key %d reported new %d times", k, newCount[k].Load())
	}
}

func TestKeySet(t *testing.T) {
	s := newKeySet(1 << 20)
	require.False(t, s.testAndAdd("a\x00b"))
	require.True(t, s.testAndAdd("a\x00b"))
	// 200,000 portfolio-like keys in 1 MiB (16,384 blocks, about 12 keys
	// each): the expected false-positive rate is about 1e-5 per key.
	fp := 0
	for p := 0; p < 20000; p++ {
		for i := 0; i < 10; i++ {
			if s.testAndAdd(fmt.Sprintf("%d\x00DATABASE#db%dn%d", p, p, i)) {
				fp++
			}
		}
	}
	require.Less(t, fp, 20, "false positives among 200k keys in 1 MiB")
}
