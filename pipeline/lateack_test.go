package pipeline

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/checkpoint"
	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

// lateSink acknowledges nothing on Write: it holds items until it has
// `file` of them or until Flush, as a sink that writes files does.
type lateSink struct {
	mu      sync.Mutex
	file    int
	held    []*mapping.Item
	res     sink.Results
	written map[string]int
	flushes int
}

func (s *lateSink) Write(_ context.Context, batch []*mapping.Item, res sink.Results) error {
	s.mu.Lock()
	s.res = res
	s.held = append(s.held, batch...)
	var done []*mapping.Item
	if len(s.held) >= s.file {
		done, s.held = s.held, nil
		s.record(done)
	}
	s.mu.Unlock()
	if done != nil {
		res.Acked(done)
	}
	return nil
}

func (s *lateSink) record(items []*mapping.Item) {
	for _, it := range items {
		s.written[it.Key]++
	}
}

func (s *lateSink) Flush(context.Context) error {
	s.mu.Lock()
	done := s.held
	s.held = nil
	s.record(done)
	s.flushes++
	res := s.res
	s.mu.Unlock()
	if len(done) > 0 {
		res.Acked(done)
	}
	return nil
}

func (s *lateSink) Close() error      { return nil }
func (s *lateSink) Stats() sink.Stats { return sink.Stats{} }

// A sink that acknowledges only in large groups, with an in-flight budget
// far smaller than a group, would stall the readers for ever unless the
// pipeline flushes it; every item is still written once and the run is
// complete.
func TestRunFlushesALateSinkWhenTheBudgetIsSpent(t *testing.T) {
	const rows = 3000
	s := &lateSink{file: 1 << 30, written: map[string]int{}}
	store := checkpoint.NewMemoryStore()
	sum, err := Run(context.Background(), job(testPlan(t), &fakeSnapshot{n: rows}, s, store), Options{Readers: 2, Writers: 2, PageSize: 50, MaxInFlight: 200})
	require.NoError(t, err)
	// testPlan builds two items per row.
	require.Equal(t, 2*rows, len(s.written))
	for k, n := range s.written {
		require.Equal(t, 1, n, k)
	}
	require.EqualValues(t, 2*rows, sum.Total.ItemsWritten)
	require.Greater(t, s.flushes, 1, "the budget is 200 rows of 3000: the run must have flushed on the way")
	for _, sh := range store.Shards() {
		require.Equal(t, checkpoint.Done, sh.Status)
	}
}
