// Package sinktest is the conformance suite every sink.Sink passes: each
// item is acknowledged exactly once, never before the destination holds
// it durably, and a cancelled Write or Flush acknowledges nothing that is
// not durable.
package sinktest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/dynafold/dynafold/mapping"
	"github.com/dynafold/dynafold/sink"
)

// Subject is one sink under test, fresh for each case.
type Subject struct {
	Sink sink.Sink
	// Durable returns the keys (Item.Key) the destination holds durably
	// now, with how many times each is there.
	Durable func() map[string]int
}

// Size is how much the suite writes concurrently: Writers goroutines of
// Batches batches of 25 items each.
type Size struct{ Writers, Batches int }

// Run runs the suite at its full size, 4,000 items from 4 writers; open
// returns a fresh subject whose destination is empty. Items have string
// attributes PK and SK.
func Run(t *testing.T, open func(t *testing.T) Subject) {
	RunSize(t, Size{Writers: 4, Batches: 40}, open)
}

// RunSize runs the suite at size: smaller for a slow destination (moto's
// server), whose Durable reads the whole table at each acknowledgement.
func RunSize(t *testing.T, size Size, open func(t *testing.T) Subject) {
	t.Run("AcksEveryItemOnceAndOnlyWhenDurable", func(t *testing.T) {
		s := open(t)
		rec := newRecorder(t, s.Durable)
		writers, batches := size.Writers, size.Batches
		g, ctx := errgroup.WithContext(context.Background())
		for w := range writers {
			g.Go(func() error {
				for b := range batches {
					if err := s.Sink.Write(ctx, Batch(fmt.Sprintf("w%d-b%d", w, b), 25), rec); err != nil {
						return err
					}
				}
				return nil
			})
		}
		require.NoError(t, g.Wait())
		require.NoError(t, s.Sink.Flush(context.Background()))
		require.NoError(t, s.Sink.Close())
		acked := rec.snapshot()
		require.Len(t, acked, writers*batches*25)
		for k, n := range acked {
			require.Equal(t, 1, n, "item %q acknowledged %d times", k, n)
		}
		durable := s.Durable()
		require.Len(t, durable, writers*batches*25)
		for k, n := range durable {
			require.Equal(t, 1, n, "item %q stored %d times", k, n)
		}
		require.Empty(t, rec.early(), "items acknowledged before they were durable")
	})

	t.Run("FlushWithNothingHeldIsANoOp", func(t *testing.T) {
		s := open(t)
		require.NoError(t, s.Sink.Flush(context.Background()))
		require.NoError(t, s.Sink.Close())
		require.Empty(t, s.Durable())
	})

	t.Run("CancelledAcknowledgesOnlyWhatIsDurable", func(t *testing.T) {
		s := open(t)
		rec := newRecorder(t, s.Durable)
		require.NoError(t, s.Sink.Write(context.Background(), Batch("before", 25), rec))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = s.Sink.Write(ctx, Batch("cancelled", 25), rec) // may fail or hold
		_ = s.Sink.Flush(ctx)                              // may fail: nothing it did not finish is acked
		require.NoError(t, s.Sink.Close())
		require.Empty(t, rec.early(), "items acknowledged before they were durable")
		durable := s.Durable()
		for k := range rec.snapshot() {
			require.Contains(t, durable, k, "an acknowledged item must be durable")
		}
		for k, n := range durable {
			require.Equal(t, 1, n, "item %q stored %d times", k, n)
		}
	})
}

// Batch returns n items with keys prefix-0 … prefix-(n-1).
func Batch(prefix string, n int) []*mapping.Item {
	out := make([]*mapping.Item, n)
	for i := range out {
		pk, sk := prefix, fmt.Sprintf("item-%04d", i)
		out[i] = &mapping.Item{
			Attrs: map[string]types.AttributeValue{
				"PK": &types.AttributeValueMemberS{Value: pk},
				"SK": &types.AttributeValueMemberS{Value: sk},
				"n":  &types.AttributeValueMemberN{Value: fmt.Sprint(i)},
			},
			Key: pk + "\x00" + sk, PKLen: len(pk), Size: len(pk) + len(sk) + 8,
		}
	}
	return out
}

// recorder is the Results a suite hands to Write: it counts
// acknowledgements and checks each against the destination at that
// instant.
type recorder struct {
	t       *testing.T
	durable func() map[string]int
	mu      sync.Mutex
	acked   map[string]int
	notYet  []string
}

func newRecorder(t *testing.T, durable func() map[string]int) *recorder {
	return &recorder{t: t, durable: durable, acked: map[string]int{}}
}

func (r *recorder) Acked(items []*mapping.Item) {
	now := r.durable()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range items {
		r.acked[it.Key]++
		if now[it.Key] == 0 {
			r.notYet = append(r.notYet, it.Key)
		}
	}
}

func (r *recorder) Rejected(it *mapping.Item, err error) {
	r.t.Errorf("item %q rejected: %v", it.Key, err)
}

func (r *recorder) Retried([]*mapping.Item, bool) {}

func (r *recorder) snapshot() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.acked))
	for k, v := range r.acked {
		out[k] = v
	}
	return out
}

func (r *recorder) early() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.notYet
}
