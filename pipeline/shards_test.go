package pipeline

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// countingReader records the tasks it reads and whether it finished.
type countingReader struct {
	mu       *sync.Mutex
	read     *[]int
	finished *int
	fail     int
}

func (c countingReader) ReadShard(_ context.Context, task int) error {
	if task == c.fail {
		return errors.New("shard failed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.read = append(*c.read, task)
	return nil
}

func (c countingReader) Finish(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	*c.finished++
	return nil
}

func queueOf(n int) func(context.Context) (int, bool, error) {
	ch := make(chan int, n)
	for i := range n {
		ch <- i
	}
	close(ch)
	return func(context.Context) (int, bool, error) {
		t, ok := <-ch
		return t, ok, nil
	}
}

func TestReadShards(t *testing.T) {
	t.Run("every task once, every reader finished", func(t *testing.T) {
		var mu sync.Mutex
		var read []int
		finished := 0
		err := ReadShards(context.Background(), 3, queueOf(20), func() ShardReader[int] {
			return countingReader{mu: &mu, read: &read, finished: &finished, fail: -1}
		})
		require.NoError(t, err)
		require.ElementsMatch(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, read)
		require.Equal(t, 3, finished)
	})
	t.Run("a failed shard is the error", func(t *testing.T) {
		var mu sync.Mutex
		var read []int
		finished := 0
		err := ReadShards(context.Background(), 2, queueOf(10), func() ShardReader[int] {
			return countingReader{mu: &mu, read: &read, finished: &finished, fail: 4}
		})
		require.EqualError(t, err, "shard failed")
		require.NotContains(t, read, 4)
	})
}
