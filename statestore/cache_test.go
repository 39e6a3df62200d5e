package statestore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/statestore"
	"github.com/dynafold/dynafold/statestore/statestoretest"
)

// The cache keeps every promise of the store behind it: the suite runs on
// it over the files and over DynamoDB, with a cache small enough that its
// generations turn over within a case.
func TestCachedConformance(t *testing.T) {
	small := func(s statestore.Store) statestore.Store { return statestore.NewCached(s, 4) }
	t.Run("File", func(t *testing.T) { statestoretest.Run(t, fileSubject(small)) })
	t.Run("Dynamo", func(t *testing.T) { statestoretest.Run(t, dynamoSubject(t, small)) })
	// Warmed from the state table at each open (each case's resumes
	// included): small, the listing overflows it; large, it holds the
	// whole index and answers rows it does not hold as having none.
	for name, rows := range map[string]int{"DynamoWarmSmall": 4, "DynamoWarmWhole": 10_000} {
		warmed := func(s statestore.Store) statestore.Store {
			c := statestore.NewCached(s, rows).(*statestore.Cached)
			c.Warm(context.Background(), nil)
			return c
		}
		t.Run(name, func(t *testing.T) { statestoretest.Run(t, dynamoSubject(t, warmed)) })
	}
}

// fakeIndex is a row index in memory that counts the rows it is asked
// for and can fail writes or hold a read until released.
type fakeIndex struct {
	statestore.Store
	mu       sync.Mutex
	rows     map[string][]string
	asked    int
	failNext bool
	// hold, when set, is received from by Keys after it has read and
	// before it returns.
	hold chan struct{}
}

func newFakeIndex() *fakeIndex { return &fakeIndex{rows: map[string][]string{}} }

func (f *fakeIndex) Keys(_ context.Context, entity string, rows [][]byte) ([][]string, error) {
	f.mu.Lock()
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = f.rows[entity+"/"+string(r)]
	}
	f.asked += len(rows)
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return out, nil
}

func (f *fakeIndex) SetKeys(_ context.Context, entries []statestore.Entry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range entries {
		f.rows[e.Entity+"/"+string(e.Row)] = e.Keys
	}
	if f.failNext {
		// The write reached the store, but its caller is told it failed.
		f.failNext = false
		return errors.New("injected")
	}
	return nil
}

func (f *fakeIndex) ClearKeys(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rows = map[string][]string{}
	return nil
}

func row(i int) []byte { return []byte(fmt.Sprint(i)) }

func TestCachedAnswersRowsItHasSeen(t *testing.T) {
	ctx := context.Background()
	f := newFakeIndex()
	c := statestore.NewCached(f, 100).(*statestore.Cached)
	require.NoError(t, c.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: row(1), Keys: []string{"A"}}}))
	got, err := c.Keys(ctx, "e", [][]byte{row(1), row(2)})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"A"}, nil}, got)
	require.Equal(t, 1, f.asked, "row 1 was written through the cache; only row 2 is asked for")
	// Row 2's absence is remembered too: nothing else writes the index.
	got, err = c.Keys(ctx, "e", [][]byte{row(2), row(1)})
	require.NoError(t, err)
	require.Equal(t, [][]string{nil, {"A"}}, got)
	require.Equal(t, 1, f.asked)
	hits, misses := c.Stats()
	require.Equal(t, [2]int64{3, 1}, [2]int64{hits, misses})
	// Another entity with the same row key is another row.
	_, err = c.Keys(ctx, "other", [][]byte{row(1)})
	require.NoError(t, err)
	require.Equal(t, 2, f.asked)
}

func TestCachedForgetsAFailedWrite(t *testing.T) {
	ctx := context.Background()
	f := newFakeIndex()
	c := statestore.NewCached(f, 100)
	require.NoError(t, c.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: row(1), Keys: []string{"A"}}}))
	f.failNext = true
	require.Error(t, c.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: row(1), Keys: []string{"B"}}}))
	got, err := c.Keys(ctx, "e", [][]byte{row(1)})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"B"}}, got, "whether a failed write landed is the store's to say")
	require.Equal(t, 1, f.asked)
}

func TestCachedHoldsAtMostItsRows(t *testing.T) {
	ctx := context.Background()
	f := newFakeIndex()
	c := statestore.NewCached(f, 10).(*statestore.Cached)
	for i := range 10 {
		require.NoError(t, c.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: row(i), Keys: []string{fmt.Sprint("K", i)}}}))
	}
	// Ten rows fit: nothing is dropped, so the cache is the whole index
	// it has seen, and the first row is still there.
	_, err := c.Keys(ctx, "e", [][]byte{row(0)})
	require.NoError(t, err)
	require.Equal(t, 0, f.asked)
	for i := 10; i < 1000; i++ {
		require.NoError(t, c.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: row(i), Keys: []string{fmt.Sprint("K", i)}}}))
	}
	// The last row written is held; of the thousand, at most ten are, and
	// the others are asked for again and answered right.
	_, err = c.Keys(ctx, "e", [][]byte{row(999)})
	require.NoError(t, err)
	require.Equal(t, 0, f.asked)
	for i := range 999 {
		got, err := c.Keys(ctx, "e", [][]byte{row(i)})
		require.NoError(t, err)
		require.Equal(t, [][]string{{fmt.Sprint("K", i)}}, got)
	}
	hits, _ := c.Stats()
	require.LessOrEqual(t, hits, int64(1+1+10), "row 0, row 999 and at most ten of the rest")
}

// A read that overlaps a write of the same row must not leave what it
// read (older) in the cache in place of what was written.
func TestCachedKeepsAWriteThatOverlapsARead(t *testing.T) {
	ctx := context.Background()
	f := newFakeIndex()
	require.NoError(t, f.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: row(1), Keys: []string{"OLD"}}}))
	c := statestore.NewCached(f, 100)
	f.hold = make(chan struct{})
	read := make(chan [][]string)
	go func() {
		got, err := c.Keys(ctx, "e", [][]byte{row(1)})
		require.NoError(t, err)
		read <- got
	}()
	// Wait until the read has been answered by the store, then write.
	require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.asked == 1 }, 5*time.Second, 5*time.Millisecond)
	f.mu.Lock()
	hold := f.hold
	f.hold = nil
	f.mu.Unlock()
	require.NoError(t, c.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: row(1), Keys: []string{"NEW"}}}))
	close(hold)
	require.Equal(t, [][]string{{"OLD"}}, <-read)
	got, err := c.Keys(ctx, "e", [][]byte{row(1)})
	require.NoError(t, err)
	require.Equal(t, [][]string{{"NEW"}}, got)
}

// After a clear the store's index is empty, so the cache holds all of it
// and asks for nothing until a row leaves it.
func TestCachedClearForgetsEverything(t *testing.T) {
	ctx := context.Background()
	f := newFakeIndex()
	c := statestore.NewCached(f, 4)
	require.NoError(t, c.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: row(1), Keys: []string{"A"}}}))
	require.NoError(t, c.ClearKeys(ctx))
	got, err := c.Keys(ctx, "e", [][]byte{row(1), row(2)})
	require.NoError(t, err)
	require.Equal(t, [][]string{nil, nil}, got)
	require.Equal(t, 0, f.asked)
	// Five rows overflow a cache of four: one of them leaves, and from
	// then on rows the cache does not hold are asked for again.
	var five [][]byte
	for i := range 5 {
		require.NoError(t, c.SetKeys(ctx, []statestore.Entry{{Entity: "e", Row: row(10 + i), Keys: []string{fmt.Sprint("K", i)}}}))
		five = append(five, row(10+i))
	}
	got, err = c.Keys(ctx, "e", five)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"K0"}, {"K1"}, {"K2"}, {"K3"}, {"K4"}}, got)
	require.Equal(t, 1, f.asked)
}

func TestNewCachedWithNoRowsIsTheStore(t *testing.T) {
	f := newFakeIndex()
	require.Same(t, statestore.Store(f), statestore.NewCached(f, 0))
}

// BenchmarkCachedMemoryPerRow fills a cache of DefaultCacheRows rows
// shaped like the portfolios design's databases (one 30-byte item key)
// and reports the Go heap it holds per row: the figure --index-cache's
// help and docs/sync-state.md quote.
//
//	go test -run '^$' -bench CachedMemoryPerRow -benchtime 1x ./statestore/
func BenchmarkCachedMemoryPerRow(b *testing.B) {
	ctx := context.Background()
	for range b.N {
		f := newFakeIndex()
		c := statestore.NewCached(f, statestore.DefaultCacheRows)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range statestore.DefaultCacheRows {
			e := statestore.Entry{Entity: "database", Row: []byte(fmt.Sprintf("\x01Db%dn%dd%d", i, i%10, i%5)),
				Keys: []string{fmt.Sprintf("%d\x00DATABASE#db%dn%dd%d", i/50, i, i%10, i%5)}}
			if err := c.SetKeys(ctx, []statestore.Entry{e}); err != nil {
				b.Fatal(err)
			}
		}
		f.rows = nil // the fake store's own copy is not the cache's
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(statestore.DefaultCacheRows), "bytes/row")
		runtime.KeepAlive(c)
	}
}

// Keys calls read the store one at a time: a call that makes room in the
// cache would keep another in flight from keeping what it read, so two
// readers of disjoint rows (a sync round's slices read at once) would miss
// on the same rows round after round. A second call waits while the
// first's read is held in the store.
func TestCachedReadsTheStoreOneCallAtATime(t *testing.T) {
	ctx := context.Background()
	f := newFakeIndex()
	c := statestore.NewCached(f, 100)
	f.hold = make(chan struct{})
	first := make(chan error)
	go func() {
		_, err := c.Keys(ctx, "e", [][]byte{row(1)})
		first <- err
	}()
	require.Eventually(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.asked == 1 }, 5*time.Second, 5*time.Millisecond)
	second := make(chan error)
	go func() {
		_, err := c.Keys(ctx, "e", [][]byte{row(2)})
		second <- err
	}()
	require.Never(t, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.asked > 1 }, 200*time.Millisecond, 5*time.Millisecond,
		"the second call reached the store while the first call's read was in it")
	f.mu.Lock()
	hold := f.hold
	f.hold = nil
	f.mu.Unlock()
	close(hold)
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	require.Equal(t, 2, f.asked)
	// Both calls kept what they read.
	_, err := c.Keys(ctx, "e", [][]byte{row(1), row(2)})
	require.NoError(t, err)
	require.Equal(t, 2, f.asked)
}
