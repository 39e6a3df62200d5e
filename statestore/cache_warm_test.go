package statestore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/statestore"
)

// listingIndex is a fakeIndex that can list itself, fail the listing, or
// hold it until released.
type listingIndex struct {
	*fakeIndex
	fail error
	hold chan struct{}
}

func (l *listingIndex) ListKeys(_ context.Context, limit int, fn func(string, []byte, []string)) (bool, error) {
	if l.hold != nil {
		<-l.hold
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for k, keys := range l.rows {
		if n == limit {
			return false, nil
		}
		entity, r, _ := strings.Cut(k, "/")
		fn(entity, []byte(r), keys)
		n++
		if l.fail != nil && n == 2 {
			return false, l.fail
		}
	}
	return true, nil
}

func filled(n int) *listingIndex {
	f := newFakeIndex()
	for i := range n {
		f.rows["e/"+string(row(i))] = []string{fmt.Sprint("K", i)}
	}
	return &listingIndex{fakeIndex: f}
}

func warmed(t *testing.T, store statestore.Store, rows int) (*statestore.Cached, statestore.WarmStats) {
	c := statestore.NewCached(store, rows).(*statestore.Cached)
	done := make(chan statestore.WarmStats, 1)
	c.Warm(context.Background(), func(w statestore.WarmStats) { done <- w })
	return c, <-done
}

// An index that fits is read once: every lookup after is answered from
// memory, a row never written (a new row) included.
func TestCachedWarmHoldsTheWholeIndex(t *testing.T) {
	ctx := context.Background()
	l := filled(50)
	c, w := warmed(t, l, 100)
	require.Equal(t, statestore.WarmStats{Rows: 50, All: true, Seconds: w.Seconds}, w)
	got, err := c.Keys(ctx, "e", [][]byte{row(7), row(49), row(50), row(7000)})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"K7"}, {"K49"}, nil, nil}, got)
	require.Equal(t, 0, l.asked)
	hits, misses := c.Stats()
	require.Equal(t, [2]int64{4, 0}, [2]int64{hits, misses})
}

// An index larger than the cache is listed up to the cache's size; the
// rest is asked for.
func TestCachedWarmStopsAtItsRows(t *testing.T) {
	ctx := context.Background()
	l := filled(50)
	c, w := warmed(t, l, 10)
	require.False(t, w.All)
	require.Equal(t, int64(10), w.Rows)
	var all [][]byte
	for i := range 60 {
		all = append(all, row(i))
	}
	got, err := c.Keys(ctx, "e", all)
	require.NoError(t, err)
	for i := range 50 {
		require.Equal(t, []string{fmt.Sprint("K", i)}, got[i])
	}
	// Some of the listed rows are answered from memory (the lookups move
	// them between generations, so not all ten), the rest asked for.
	hits, misses := c.Stats()
	require.Positive(t, hits)
	require.Equal(t, int64(l.asked), misses)
	require.Equal(t, int64(60), hits+misses)
}

// A failed listing leaves the cache empty and every row is asked for.
func TestCachedWarmFailureStartsEmpty(t *testing.T) {
	ctx := context.Background()
	l := filled(5)
	l.fail = errors.New("injected")
	c, w := warmed(t, l, 100)
	require.ErrorIs(t, w.Err, l.fail)
	require.False(t, w.All)
	got, err := c.Keys(ctx, "e", [][]byte{row(0), row(99)})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"K0"}, nil}, got)
	require.Equal(t, 2, l.asked)
}

// Reads and writes wait for the listing: what they see is never older
// than it.
func TestCachedWarmIsWaitedFor(t *testing.T) {
	ctx := context.Background()
	l := filled(3)
	l.hold = make(chan struct{})
	c := statestore.NewCached(l, 100).(*statestore.Cached)
	c.Warm(ctx, nil)
	wrote := make(chan error, 1)
	go func() { wrote <- c.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: row(1), Keys: []string{"NEW"}}}) }()
	select {
	case <-wrote:
		t.Fatal("a write went through before the listing was over")
	case <-time.After(50 * time.Millisecond):
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err := c.Keys(short, "e", [][]byte{row(1)})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	close(l.hold)
	require.NoError(t, <-wrote)
	got, err := c.Keys(ctx, "e", [][]byte{row(1), row(2)})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"NEW"}, {"K2"}}, got)
	require.Equal(t, 0, l.asked)
}

// A store that cannot list itself is not warmed.
func TestCachedWarmNeedsALister(t *testing.T) {
	f := newFakeIndex()
	c := statestore.NewCached(f, 100).(*statestore.Cached)
	c.Warm(context.Background(), func(statestore.WarmStats) { t.Fatal("warmed a store that cannot list") })
	_, err := c.Keys(context.Background(), "e", [][]byte{row(1)})
	require.NoError(t, err)
	require.Equal(t, 1, f.asked)
}
